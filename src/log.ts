import { pino, type Logger } from 'pino';

export type { Logger };

/**
 * JSON logs. Nothing here ever receives a request's query string, body, or Authorization and
 * Cookie headers; the redaction list is a second line of defence for anything passed by mistake.
 */
export function createLogger(level: string): Logger {
  return pino({
    level,
    base: undefined,
    redact: {
      paths: [
        'password', '*.password', 'secret', '*.secret', 'clientSecret', '*.clientSecret', 'token', '*.token',
        'headers.authorization', 'headers.cookie', '*.headers.authorization', '*.headers.cookie',
        'access_token', 'refresh_token', 'client_secret', 'code',
      ],
      censor: '[redacted]',
    },
  });
}
