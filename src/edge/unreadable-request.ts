import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/** How long a client that keeps sending after its request was refused may go on before the connection is cut. */
const LINGER_MS = 5000;

const STATUS: Record<string, string> = {
  HPE_HEADER_OVERFLOW: '431 Request Header Fields Too Large',
  ERR_HTTP_REQUEST_TIMEOUT: '408 Request Timeout',
};

/**
 * A request Node's HTTP parser cannot read (a request line or head over 16 KiB, bytes that are not
 * HTTP) never reaches the application. Node's own answer writes the status and destroys the socket
 * at once; with the rest of the client's request still unread (a 70 KB query string), the kernel
 * resets the connection, and the client — on a kept-alive connection always, from Node 24 on
 * often — sees ECONNRESET instead of the 431. Here the status is written, the connection is ended
 * from our side, and what the client still sends is read and dropped, so the answer arrives.
 */
export function answerUnreadableRequests(server: Server): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    // A reset by the client, or a response already under way on this connection: nothing can be said.
    const answering = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (err.code === 'ECONNRESET' || !socket.writable || answering?.headersSent) {
      socket.destroy();
      return;
    }
    const status = STATUS[err.code ?? ''] ?? '400 Bad Request';
    socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
    socket.resume();
    socket.setTimeout(LINGER_MS, () => socket.destroy());
  });
}
