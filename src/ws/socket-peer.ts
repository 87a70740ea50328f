// Owns a Peer over one uWS sync socket: corked sends and publishes, its queue behind a slow buffer, the backpressure close, an idempotent end.
import type { WebSocket } from 'uWebSockets.js';
import type { Peer, PeerInfo } from '../doc/peer.js';
import { CLOSE } from '../errors.js';
import { syncCounts } from '../metrics/instruments.js';
import { QUEUED_FRAME_BYTES, type SocketTopics, type TopicMember } from './socket-topics.js';

/** uWS send(): 2 = dropped because the socket is past maxBackpressure. */
const SEND_DROPPED = 2;

/**
 * What uWS may hold in one socket's buffer before further frames queue here instead, shared with every other socket
 * they go to: past it a socket is taken off its topics, and its queue is written as the buffer drains. It bounds the
 * copies one slow reader costs (this, plus a fragment, plus the bytes published between two checks). At most a quarter
 * of the socket's limit, as a fragment is, so what the queue writes never itself passes the limit.
 */
export const QUEUE_AT_BYTES = 1024 * 1024;

/** A queued frame larger than this is written as WebSocket fragments of this size, each when the buffer has room. */
export const FRAGMENT_BYTES = QUEUED_FRAME_BYTES;

export class SocketPeer implements Peer, TopicMember {
  closed = false;
  readonly sessionId: string;
  readonly userId: string;
  readonly name: string | undefined;
  readonly email: string | undefined;
  readonly editorId: string;
  /** Read by the actor at every update, so a downgrade applies to frames already queued. */
  readOnly: boolean;
  readonly extensions: boolean;
  /** Topics this socket subscribed to, in order: left in uWS while its queue is written, joined again after. */
  private readonly topics: string[] = [];
  /** Frames not yet written whole, oldest first, the first `written` bytes in; undefined: none, and on its uWS topics. */
  private queue: Uint8Array[] | undefined;
  private written = 0;
  /** Bytes of the queue not yet written. */
  private queuedBytes = 0;
  /** QUEUE_AT_BYTES and FRAGMENT_BYTES, each at most a quarter of this socket's limit. */
  private readonly queueAt: number;
  private readonly fragment: number;

  /** `identity`: who is on the socket, copied from its session when it opens. */
  constructor(private readonly ws: WebSocket<unknown>, identity: PeerInfo, private readonly maxBuffered: number, private readonly registry: SocketTopics) {
    this.sessionId = identity.sessionId;
    this.userId = identity.userId;
    this.name = identity.name;
    this.email = identity.email;
    this.editorId = identity.editorId;
    this.readOnly = identity.readOnly;
    this.extensions = identity.extensions;
    this.queueAt = Math.min(QUEUE_AT_BYTES, Math.floor(maxBuffered / 4));
    this.fragment = Math.min(FRAGMENT_BYTES, Math.floor(maxBuffered / 4));
  }

  send(bytes: Uint8Array): boolean {
    if (this.closed) return false;
    syncCounts.framesSent++;
    // Behind a queue, or too large to copy at once: the frame keeps its place in the queue.
    if (this.queue !== undefined || bytes.length >= QUEUED_FRAME_BYTES) {
      this.enqueue(bytes);
      return !this.closed;
    }
    let status = 0;
    // Sends happen from the actor, outside any uWS callback: cork so each frame is one write.
    this.ws.cork(() => {
      status = this.ws.send(bytes, true);
    });
    if (this.closed) return false;
    // A dropped Yjs frame would leave a gap in the client's document: end it so it reconnects and resyncs.
    if (status === SEND_DROPPED) this.close(CLOSE.BACKPRESSURE, 'backpressure limit reached; reconnect to resync');
    else this.checkBackpressure();
    return !this.closed;
  }

  /**
   * Takes one frame through this socket's queue (SocketTopics: large frames, and every frame while a queue exists). A
   * frame that fits is written at once; else the socket leaves its uWS topics (their frames come here instead, so the
   * order holds) and the queue is written as the buffer drains. Frames are held by reference, shared between sockets.
   */
  enqueue(bytes: Uint8Array): void {
    if (this.closed) return;
    if (this.queue === undefined) {
      if (bytes.length <= this.fragment && this.ws.getBufferedAmount() < this.queueAt) {
        this.ws.cork(() => this.ws.send(bytes, true));
        return;
      }
      this.leaveTopics();
    }
    (this.queue as Uint8Array[]).push(bytes);
    this.queuedBytes += bytes.length;
    syncCounts.framesQueued++;
    this.pump();
  }

  sendSide(): { buffered: number; queued: number } {
    return { buffered: this.closed ? 0 : this.ws.getBufferedAmount(), queued: this.queuedBytes };
  }

  /** uWS's drain: the buffer went down; write what is queued. */
  drained(): void {
    this.pump();
  }

  /**
   * Closes the socket with 1013 when what waits for it passes WS_MAX_BACKPRESSURE_BYTES: its buffer, and what queues
   * behind the frame being written (a socket that never reads holds that one, shared, and everything after it). A
   * buffer past QUEUE_AT_BYTES takes it off its topics, so what comes next is held once for all, not copied here.
   */
  checkBackpressure(): void {
    if (this.closed) return;
    const buffered = this.ws.getBufferedAmount();
    const queue = this.queue;
    const behind = queue === undefined ? 0 : this.queuedBytes - ((queue[0]?.length ?? 0) - this.written);
    if (buffered + behind > this.maxBuffered) this.close(CLOSE.BACKPRESSURE, 'backpressure limit reached; reconnect to resync');
    else if (queue === undefined && buffered >= this.queueAt) this.leaveTopics();
  }

  subscribe(topic: string): void {
    if (this.closed) return;
    this.topics.push(topic);
    // While a queue is written, the topic's frames come through it (SocketTopics), not from uWS.
    if (this.queue === undefined) this.ws.subscribe(topic);
    this.registry.join(this, topic, this.queue !== undefined);
  }

  publish(topic: string, bytes: Uint8Array): boolean {
    // A closed socket would throw; the caller then publishes through another member.
    if (this.closed) return false;
    // uWS excludes this socket and keeps each socket's order; the caller then checks every subscriber's buffer
    // (checkBackpressure), since uWS itself would only drop frames silently or cut the socket without a close frame.
    // Large frames and queued members are served one by one (SocketTopics.route); uWS publishes through any socket
    // that ever subscribed, on its topics or off them.
    if (this.registry.route(topic, bytes, this)) this.ws.cork(() => this.ws.publish(topic, bytes, true));
    syncCounts.framesPublished++;
    return true;
  }

  close(code: number, reason: string): void {
    if (this.closed) return;
    this.closed = true;
    this.ws.end(code, reason);
  }

  /** The socket closed (uWS's close handler, also reached from close()): it leaves every topic and drops its queue. */
  ended(): void {
    this.closed = true;
    this.queue = undefined;
    this.queuedBytes = 0;
    this.registry.leave(this, this.topics);
  }

  private leaveTopics(): void {
    this.queue = [];
    // Frames uWS published before this stay pending for the socket and go out ahead of the queue's first write (uWS
    // drains a subscriber's topic messages at each send), so the order holds across the switch.
    for (const topic of this.topics) this.ws.unsubscribe(topic);
    this.registry.detach(this, this.topics);
  }

  private pump(): void {
    const queue = this.queue;
    if (queue === undefined || this.closed) return;
    // `closed` again each time: a failed write may close the socket (uWS calls its close handler, ended()) mid-loop.
    while (!this.closed && queue.length > 0 && this.ws.getBufferedAmount() < this.queueAt) {
      const frame = queue[0] as Uint8Array;
      const start = this.written;
      const end = Math.min(start + this.fragment, frame.length);
      // A frame is one WebSocket message: its fragments go out with nothing between them but control frames, which
      // holds because this socket is on no topic while it has a queue.
      this.ws.cork(() => {
        if (start === 0 && end === frame.length) this.ws.send(frame, true);
        else if (start === 0) this.ws.sendFirstFragment(frame.subarray(start, end), true);
        else if (end === frame.length) this.ws.sendLastFragment(frame.subarray(start, end));
        else this.ws.sendFragment(frame.subarray(start, end));
      });
      this.queuedBytes -= end - start;
      if (end === frame.length) {
        queue.shift();
        this.written = 0;
      } else this.written = end;
    }
    if (this.closed) return;
    if (queue.length > 0) {
      this.checkBackpressure();
      return;
    }
    this.queue = undefined;
    this.registry.attach(this, this.topics);
    for (const topic of this.topics) this.ws.subscribe(topic);
  }
}
