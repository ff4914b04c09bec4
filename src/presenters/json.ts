import { z } from 'zod';

/** A moment as the JSON shows it: an ISO 8601 date-time in UTC (`toIso`). */
export const timestamp = z.string().meta({ format: 'date-time' });
