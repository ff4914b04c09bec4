import type { Server, ServerResponse } from 'node:http';

/** How a drain ended: every connection closed by itself, or the deadline came first. */
export interface DrainResult {
  /** Requests that were in flight when the drain began. */
  inFlight: number;
  /** Whether connections were still open at the deadline (and were destroyed). */
  timedOut: boolean;
  /** Requests cut unanswered at the deadline. */
  cut: number;
}

export interface Drainable {
  /**
   * The first step of a stop with a delay: from now on every answer says `Connection: close`
   * (those under way too, when their headers are not sent yet), while connections are still
   * accepted and every request on them, kept-alive ones included, is read and answered.
   */
  closeAfterAnswers(): void;
  drain(timeoutMs: number): Promise<DrainResult>;
}

/**
 * Follows the server's requests in flight so that a stop can end the service without losing one.
 * A stop may begin with `closeAfterAnswers` and a delay, during which the server still accepts
 * and answers everything, each answer closing its connection: a request a client has already
 * written on a kept-alive connection, or one a load balancer still sends before it has seen
 * /readyz turn 503, is answered rather than reset. Then the drain:
 * it stops accepting connections, closes idle keep-alive connections at once, lets every request
 * under way finish with `Connection: close` (so its connection ends with its answer instead of
 * waiting to be reused), and past `timeoutMs` destroys whatever is left.
 *
 * A connection accepted but not yet read from counts as idle to Node, so a request whose bytes
 * arrive in the very moment of the signal can still be reset, as can one still in the listen
 * backlog; a load balancer that has seen /readyz turn 503 sends none of those.
 */
export function drainable(server: Server): Drainable {
  const inFlight = new Set<ServerResponse>();
  let closing = false;

  server.on('request', (_req, res: ServerResponse) => {
    // A request that arrives on a kept-alive connection during the stop is answered, then its connection closes.
    if (closing) res.shouldKeepAlive = false;
    inFlight.add(res);
    res.once('close', () => inFlight.delete(res));
  });

  const closeAfterAnswers = () => {
    closing = true;
    for (const res of inFlight) if (!res.headersSent) res.shouldKeepAlive = false;
  };

  return {
    closeAfterAnswers,
    drain(timeoutMs) {
      closeAfterAnswers();
      const started = inFlight.size;
      for (const res of inFlight) {
        if (!res.headersSent) res.shouldKeepAlive = false;
        // An answer already on its way as keep-alive leaves an idle connection behind it: close that too.
        else if (res.shouldKeepAlive) res.once('close', () => server.closeIdleConnections());
      }
      return new Promise((resolve) => {
        const deadline = setTimeout(() => {
          const cut = inFlight.size;
          server.closeAllConnections();
          resolve({ inFlight: started, timedOut: true, cut });
        }, timeoutMs);
        server.close(() => {
          clearTimeout(deadline);
          resolve({ inFlight: started, timedOut: false, cut: 0 });
        });
        server.closeIdleConnections();
      });
    },
  };
}
