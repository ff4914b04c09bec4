/**
 * Records "last used" times without a write on every request: at most once a minute per key
 * and instance, in the background. A failed write is simply tried again on the next use. The
 * map is bounded so that a flood of distinct keys cannot grow it without limit.
 */
const INTERVAL_MS = 60_000;
const MAX_KEYS = 10_000;

export function lastUseRecorder(onError: (err: unknown) => void = () => {}) {
  const written = new Map<number | string, number>();
  return function recordUse(key: number | string, write: () => Promise<void>): void {
    const last = written.get(key) ?? 0;
    if (Date.now() - last <= INTERVAL_MS) return;
    if (written.size >= MAX_KEYS) written.clear();
    written.set(key, Date.now());
    void write().catch((err: unknown) => {
      written.delete(key);
      onError(err);
    });
  };
}
