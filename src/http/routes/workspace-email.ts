// Owns the public owner-email operations: Get Email Verification Status (spec 4.16) and Send Login Link (spec 4.13).
import { notFound } from '../../errors.js';
import type { AccountMail } from '../../tenant/account-mail.js';
import { checkContinueUrl, refuseDisposable } from '../../tenant/email-rules.js';
import type { OwnerEmails } from '../../tenant/owner-email.js';
import type { Workspaces } from '../../tenant/workspaces.js';
import { ok, operation, type Operation } from '../operation.js';
import { emailStatusSchema, sendLoginLinkSchema } from '../schemas/workspace.js';

export interface WorkspaceEmailDeps {
  readonly workspaces: Pick<Workspaces, 'idForEmail'>;
  readonly ownerEmails: Pick<OwnerEmails, 'status'>;
  readonly accountMail: Pick<AccountMail, 'requestLoginLink'>;
  /** CONSOLE_ORIGIN and this server's own origin (its console is served at /console). */
  readonly consoleOrigins: () => readonly string[];
}

export function workspaceEmailOperations(deps: WorkspaceEmailDeps): Operation[] {
  return [
    operation<{ ownerEmail: string }, 'public'>({
      paths: ['/v2/workspace/email/status'],
      auth: 'public',
      schema: emailStatusSchema,
      targetEmail: { limiter: 'emailStatus', of: (input) => input.ownerEmail },
      handle: (input) => {
        const workspaceId = deps.workspaces.idForEmail(input.ownerEmail);
        if (workspaceId === undefined) throw notFound('no workspace is owned by this email address');
        const { verified, reactivated } = deps.ownerEmails.status(workspaceId);
        const message = !verified ? 'Email not yet verified' : reactivated ? 'Email verified and workspace reactivated' : 'Email verified';
        return ok(message, { verified });
      },
    }),
    operation<{ email: string; continueUrl: string }, 'public'>({
      paths: ['/v2/workspace/email/send-login-link'],
      auth: 'public',
      schema: sendLoginLinkSchema,
      targetEmail: { limiter: 'emailSend', of: (input) => input.email },
      handle: async (input) => {
        const continueUrl = checkContinueUrl(input.continueUrl, deps.consoleOrigins());
        refuseDisposable(input.email, 'data.email');
        // Committed before the answer, the same write for every address: whether it owns a workspace is looked up
        // when the email is sent.
        await deps.accountMail.requestLoginLink(input.email.trim(), continueUrl);
        return ok('If this address owns a workspace, a sign-in link has been sent to it', null);
      },
    }),
  ];
}
