// Owns the pages behind the links in account emails: GET shows a confirm button, POST redeems the one-time link (verify, sign in).
import type { HttpRequest, HttpResponse, TemplatedApp } from 'uWebSockets.js';
import { toAppError } from '../errors.js';
import type { Logger } from '../log.js';
import { escapeHtml } from '../delivery/templates.js';
import type { LinkPurpose, OwnerEmails } from '../tenant/owner-email.js';
import type { Workspaces } from '../tenant/workspaces.js';
import { readBody } from './body.js';

export const EMAIL_LINK_PATHS = { verify: '/email/verify', login: '/email/sign-in' } as const satisfies Record<LinkPurpose, string>;

export interface EmailLinkDeps {
  readonly ownerEmails: Pick<OwnerEmails, 'redeem'>;
  readonly workspaces: Pick<Workspaces, 'get'>;
  /** Origin of PUBLIC_URL: a POST whose Origin header names another site is refused (login CSRF). */
  readonly publicUrl: () => string;
  readonly log: Logger;
  /** The public operations' per-address limit, taken by each POST (throws RESOURCE_EXHAUSTED). */
  readonly limitClient: (res: HttpResponse, req: HttpRequest) => void;
}

const FORM_LIMIT = 4096;

/**
 * Mounts GET and POST of both link paths. GET never redeems: mail scanners and link previews fetch links, and a
 * one-time link used up by a scanner would fail when the owner clicks it. The POST comes from the page's button.
 */
export function mountEmailLinks(app: TemplatedApp, deps: EmailLinkDeps): void {
  for (const purpose of ['verify', 'login'] as const) {
    const path = EMAIL_LINK_PATHS[purpose];
    app.get(path, (res, req) => {
      const token = new URLSearchParams(req.getQuery() ?? '').get('token') ?? '';
      writeHtml(res, 200, confirmPage(purpose, path, token));
    });
    app.post(path, (res, req) => redeemRequest(res, req, purpose, deps));
  }
}

function redeemRequest(res: HttpResponse, req: HttpRequest, purpose: LinkPurpose, deps: EmailLinkDeps): void {
  const state = { aborted: false };
  res.onAborted(() => {
    state.aborted = true;
  });
  try {
    deps.limitClient(res, req);
  } catch (error) {
    const limited = toAppError(error);
    const retryAfter = String(Math.max(1, Math.ceil(limited.retryAfterSeconds ?? 60)));
    writeHtml(res, limited.httpStatus, page('Too many attempts', `<p>${escapeHtml(limited.message)}</p>`), [['retry-after', retryAfter]]);
    return;
  }
  const origin = req.getHeader('origin');
  const expected = new URL(deps.publicUrl()).origin;
  if (origin !== '' && origin !== 'null' && origin !== expected) {
    writeHtml(res, 403, page('Not allowed', '<p>This form must be sent from the page of the link in your email.</p>'));
    return;
  }
  readBody(res, FORM_LIMIT)
    .then(async (raw) => {
      const token = new URLSearchParams(raw.toString('utf8')).get('token') ?? '';
      const redeemed = await deps.ownerEmails.redeem(token, purpose);
      if (state.aborted) return;
      if (purpose === 'verify') {
        writeHtml(res, 200, page('Email verified', '<p>Your email address is verified. Your API keys keep working; you can close this page.</p>'));
        return;
      }
      const workspace = deps.workspaces.get({ kind: 'workspace', workspaceId: redeemed.workspaceId });
      // The credentials ride in the fragment: browsers send it to no server and put it in no Referer header.
      const fragment = new URLSearchParams({ workspaceId: workspace.id, workspaceAuthToken: workspace.authToken }).toString();
      const target = new URL(redeemed.continueUrl ?? '/', deps.publicUrl());
      target.hash = fragment;
      deps.log.info('signed in with a login link', { workspaceId: workspace.id });
      if (!state.aborted) writeRedirect(res, target.href);
    })
    .catch((error: unknown) => {
      const appError = toAppError(error);
      if (appError.status === 'INTERNAL') deps.log.error('email link failed', { error });
      if (state.aborted) return;
      const message = appError.status === 'INTERNAL' ? 'Something went wrong on the server. Try again later.' : appError.message;
      writeHtml(res, appError.httpStatus, page('Link not valid', `<p>${escapeHtml(message)}</p>`));
    });
}

const SECURITY_HEADERS: ReadonlyArray<readonly [string, string]> = [
  ['cache-control', 'no-store'],
  ['referrer-policy', 'no-referrer'],
  ['x-content-type-options', 'nosniff'],
  ['x-frame-options', 'DENY'],
  ['content-security-policy', "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'"],
];

function writeHtml(res: HttpResponse, status: number, html: string, extra: ReadonlyArray<readonly [string, string]> = []): void {
  res.cork(() => {
    res.writeStatus(statusLine(status)).writeHeader('content-type', 'text/html; charset=utf-8');
    for (const [name, value] of [...SECURITY_HEADERS, ...extra]) res.writeHeader(name, value);
    res.end(html);
  });
}

function writeRedirect(res: HttpResponse, location: string): void {
  res.cork(() => {
    res.writeStatus('303 See Other').writeHeader('location', location);
    for (const [name, value] of SECURITY_HEADERS) res.writeHeader(name, value);
    res.end();
  });
}

function statusLine(status: number): string {
  const text: Record<number, string> = {
    200: 'OK',
    400: 'Bad Request',
    403: 'Forbidden',
    413: 'Payload Too Large',
    429: 'Too Many Requests',
    500: 'Internal Server Error',
  };
  return `${status} ${text[status] ?? 'Error'}`;
}

function confirmPage(purpose: LinkPurpose, path: string, token: string): string {
  const [title, button] = purpose === 'verify' ? ['Verify your email address', 'Verify my email address'] : ['Sign in to Plait', 'Sign in'];
  return page(
    title,
    `<form method="post" action="${path}"><input type="hidden" name="token" value="${escapeHtml(token)}">` +
      `<button type="submit">${button}</button></form>`,
  );
}

function page(title: string, body: string): string {
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">` +
    `<title>${escapeHtml(title)}</title><style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem}` +
    `button{font-size:1rem;padding:.6rem 1.2rem}</style></head><body><h1>${escapeHtml(title)}</h1>${body}</body></html>`
  );
}
