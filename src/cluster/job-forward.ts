// Owns job forwarding between nodes: a background job that needs a document another node owns runs on that node (request/reply).
import type { NatsConnection, Subscription } from 'nats';
import { AppError, CANONICAL, unavailable, type CanonicalStatus } from '../errors.js';
import type { Logger } from '../log.js';
import type { JobForwarding, JobRecord } from '../tenant/jobs.js';
import { leaseKey } from './leases.js';

/** `plait.node.<node>.job`: request/reply, one job run for the worker. */
export const jobSubject = (node: string): string => `plait.node.${leaseKey(node)}.job`;

/** A forwarded job may take a while (a migration copies a document's rows); past this the worker postpones it (jobs are idempotent). */
const JOB_TIMEOUT_MS = 60_000;

interface Request {
  readonly job: JobRecord;
  readonly hops: number;
}

type Reply = { readonly ok: true; readonly result?: unknown } | { readonly ok: false; readonly status: CanonicalStatus; readonly message: string };

/** What the serving end runs: `Jobs.runForwarded`. */
export interface ForwardedJobRunner {
  runForwarded(job: JobRecord, hops: number): Promise<unknown>;
}

/**
 * Both ends. The worker (the holder of the worker role, which records every job's status) sends the job record to the
 * owner of the document its runner could not take; the owner runs the same runner on its own actors and answers the
 * result or the error's status and message. No answer (the owner gone, NATS away, past the timeout): UNAVAILABLE, and
 * the worker puts the job back to pending for its next scan.
 */
export class JobForwarder implements JobForwarding {
  private sub: Subscription | undefined;

  constructor(private readonly nc: NatsConnection, private readonly nodeId: string, private readonly log: Pick<Logger, 'warn'>) {}

  async forward(node: string, job: JobRecord, hops: number): Promise<unknown> {
    let reply: Reply;
    try {
      const message = await this.nc.request(jobSubject(node), new TextEncoder().encode(JSON.stringify({ job, hops } satisfies Request)), { timeout: JOB_TIMEOUT_MS });
      reply = JSON.parse(new TextDecoder().decode(message.data)) as Reply;
    } catch (error) {
      this.log.warn('a forwarded job got no answer', { node, jobId: job.jobId, error: String(error) });
      throw unavailable(`node ${node}, which owns a document of this job, did not answer; the job runs again later`);
    }
    if (reply.ok) return reply.result;
    throw new AppError(reply.status in CANONICAL ? reply.status : 'INTERNAL', reply.message);
  }

  /** Runs jobs forwarded to this node. */
  serve(runner: ForwardedJobRunner): void {
    this.sub = this.nc.subscribe(jobSubject(this.nodeId), {
      callback: (error, msg) => {
        if (error !== null) {
          this.log.warn('job forwarding subscription error', { error: String(error) });
          return;
        }
        void this.answer(runner, msg.data).then((reply) => msg.respond(new TextEncoder().encode(JSON.stringify(reply))));
      },
    });
  }

  private async answer(runner: ForwardedJobRunner, data: Uint8Array): Promise<Reply> {
    try {
      const request = JSON.parse(new TextDecoder().decode(data)) as Request;
      if (typeof request.job?.jobId !== 'string' || typeof request.job.kind !== 'string' || typeof request.hops !== 'number') throw new AppError('INVALID_ARGUMENT', 'a forwarded job without a job record');
      const result = await runner.runForwarded(request.job, request.hops);
      return result === undefined ? { ok: true } : { ok: true, result };
    } catch (error) {
      if (error instanceof AppError) return { ok: false, status: error.status, message: error.message };
      this.log.warn('a forwarded job failed', { error: String(error) });
      return { ok: false, status: 'INTERNAL', message: error instanceof Error ? error.message : String(error) };
    }
  }

  stop(): void {
    this.sub?.unsubscribe();
  }
}
