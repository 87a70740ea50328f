// Owns raw TCP access to a test server: opening a socket and reading one HTTP/1.1 response off a keep-alive connection.
import { connect, type Socket } from 'node:net';

/** A TCP connection to the server on loopback; rejects (e.g. ECONNREFUSED) when it cannot be opened. */
export function openSocket(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Reads one HTTP response (status line, and the body by content-length) from a keep-alive socket. */
export function response(socket: Socket): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    let text = '';
    const onData = (chunk: Buffer): void => {
      text += chunk.toString();
      const end = text.indexOf('\r\n\r\n');
      if (end === -1) return;
      const length = Number(/content-length: (\d+)/i.exec(text.slice(0, end))?.[1] ?? 0);
      if (text.length < end + 4 + length) return;
      socket.off('data', onData);
      resolve({ status: Number(text.slice(9, 12)), body: text.slice(end + 4, end + 4 + length) });
    };
    socket.on('data', onData);
    socket.once('error', reject);
  });
}
