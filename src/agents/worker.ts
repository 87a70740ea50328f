// Owns the pool's worker entry: runs one task (an agent run, a prompt validation, an ask-ai) off the server's event loop.
import { runAgent } from './pipeline.js';
import { assist } from './providers/assist.js';
import { validatePrompt } from './providers/prompt-validator.js';
import { complete, pickProvider } from './providers/providers.js';
import { RunError, TIME_LIMIT_EXIT, type TaskFailure, type TimedTask } from './tasks.js';

/** Failures come back as data: an Error's class and code do not survive the thread boundary. */
export default async function handle({ task, timeLimitMs }: TimedTask): Promise<unknown> {
  // Past the limit the thread ends itself: whatever the task is doing (a fetch, a parse, a loop) stops with it, and
  // piscina starts a fresh worker. Timed from here, so time spent queued or booting a thread is not counted.
  const limit = setTimeout(() => process.exit(TIME_LIMIT_EXIT), timeLimitMs);
  try {
    switch (task.kind) {
      case 'run':
        return await runAgent(task);
      case 'validate-prompt':
        return await validatePrompt(task);
      case 'ask-ai': {
        const provider = pickProvider(task.env, task.provider, 'ask-ai');
        const answer = await complete(task.env, provider, {
          system: 'You rewrite text as asked. Answer with the rewritten text only, no preamble.',
          user: `${task.prompt}\n\n---\n${task.text}`,
          json: false,
          ...(task.model === undefined ? {} : { model: task.model }),
        });
        return { text: answer.text.trim(), usage: answer.usage, provider: answer.provider, model: answer.model };
      }
      case 'assist':
        return await assist(task);
      case 'crash':
        // Ends this worker thread abruptly, as a native crash or an out-of-memory would.
        process.exit(70);
    }
  } catch (error) {
    if (error instanceof RunError) return { failed: true, code: error.code, message: error.message } satisfies TaskFailure;
    return { failed: true, code: 'INTERNAL', message: `the run failed: ${error instanceof Error ? error.message : String(error)}` } satisfies TaskFailure;
  } finally {
    clearTimeout(limit);
  }
}
