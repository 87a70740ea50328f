// Owns the GDPR operations (upstream 1.3): export a user's data, erase it as a job, and the job's status (v1 and v2).
import type { UserData } from '../../doc/user-data.js';
import { notFound } from '../../errors.js';
import type { Jobs } from '../../tenant/jobs.js';
import { idString, object, pageToken } from '../schemas/common.js';
import { ok, operation, raw, type Operation } from '../operation.js';
import { both } from './organizations.js';

const exportSchema = object({ userId: idString, pageToken }, ['userId']);
const eraseSchema = object({ userId: idString }, ['userId']);
const statusSchema = object({ jobId: idString }, ['jobId']);

export function userDataOperations(userData: UserData, jobs: Jobs): Operation[] {
  return [
    operation<{ userId: string; pageToken?: string }, 'apiKey'>({
      paths: both('/users/data/get'),
      auth: 'apiKey',
      schema: exportSchema,
      handle: async (input, ctx) => {
        const page = await userData.export(ctx.identity.apiKey, input.userId, input.pageToken);
        return ok('User data retrieved successfully.', { userId: page.userId, ...page.features }, page.nextPageToken === undefined ? undefined : { nextPageToken: page.nextPageToken });
      },
    }),
    operation<{ userId: string }, 'apiKey'>({
      paths: both('/users/data/delete'),
      auth: 'apiKey',
      schema: eraseSchema,
      handle: async (input, ctx) => {
        const started = await userData.erase(ctx.identity.apiKey, input.userId);
        // Upstream's shape: no `result` wrapper, HTTP 202 (upstream notes 0).
        return raw(202, { status: 'success', message: 'User data deletion started.', data: started, statusCode: 202 });
      },
    }),
    operation<{ jobId: string }, 'apiKey'>({
      paths: both('/users/data/delete/status'),
      auth: 'apiKey',
      schema: statusSchema,
      handle: (input, ctx) => {
        const job = jobs.get(ctx.identity.apiKey, input.jobId);
        if (job.kind !== 'user-data-erase') throw notFound(`data.jobId: no user data deletion "${input.jobId}"`);
        return ok('User data deletion status retrieved.', {
          jobId: job.jobId,
          status: job.status,
          ...(job.result === undefined ? {} : { erased: job.result }),
          ...(job.error === undefined ? {} : { error: job.error }),
        });
      },
    }),
  ];
}
