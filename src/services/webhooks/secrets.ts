import { secretsOfKind } from '../../key-encryption.js';

/** A webhook's secret at rest: it signs every delivery, so it is kept readable, sealed with KEYS_SECRET when one is set. */
const webhookSecrets = secretsOfKind('webhook-secret', 'a webhook secret');
export const sealWebhookSecret = webhookSecrets.seal;
export const openWebhookSecret = webhookSecrets.open;
