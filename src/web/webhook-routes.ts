import { randomBytes } from 'node:crypto';
import Router from '@koa/router';
import type { Context } from 'koa';
import type { GroupRow } from '../db/groups.js';
import { NotFoundError, type AppError } from '../errors.js';
import { accessOf } from '../http/load-group.js';
import { pageLanguage, pageT, translateMessage, type Language, type Translate } from '../i18n.js';
import { parseId } from '../ids.js';
import { presentDelivery } from '../presenters/webhook.js';
import type { GroupAccess } from '../services/groups.js';
import {
  createWebhook,
  deleteWebhook,
  deliveriesOf,
  latestDeliveriesOf,
  redeliver,
  RECENT_DELIVERIES,
  updateWebhook,
  webhookOfGroup,
  webhooksOf,
  type Delivery,
  type Webhook,
  type WebhookDeps,
} from '../services/webhooks/manage.js';
import { MAX_SECRET_LENGTH, MAX_URL_LENGTH, MIN_SECRET_LENGTH } from '../services/webhooks/rules.js';
import { toIso } from '../time.js';
import { WEBHOOK_EVENTS, type WebhookEvent } from '../vocabulary.js';
import { formFields, formList, type WebDeps } from './context.js';
import { formErrors, LABELS } from './form-errors.js';
import { createOnce, issueOnceKey, sentOnceKey, submissionOf } from './one-time-key.js';
import { pageGroupLoader } from './group-routes.js';
import { groupRecordLoader, pageNotice } from './group-record.js';
import { render } from './render.js';

type Ctx = Context;

/** The webhook form as typed: the events are its checked boxes, Active a checkbox (unchecked sends nothing). */
interface WebhookForm {
  url: string;
  secret: string;
  events: string[];
  active: boolean;
}

/** The notices of `?notice=`, each a sentence of `webhooks:notices` (locales/<language>/webhooks.json). */
const NOTICES: ReadonlySet<string> = new Set(['created', 'repeated', 'saved', 'deleted', 'redelivered']);

/** A fresh secret for the new-webhook form: 32 random bytes in hex, which the owner copies into their receiver. */
function freshSecret(): string {
  return randomBytes(32).toString('hex');
}

function webhookForm(ctx: Ctx): WebhookForm {
  const form = formFields(ctx);
  return { url: form.url ?? '', secret: form.secret ?? '', events: formList(ctx, 'events'), active: form.active === 'on' };
}

/** The form's words for the services; on an edit a blank secret is left out, which keeps the current one. */
function webhookInput(values: WebhookForm, editing: boolean) {
  const { url, secret, events, active } = values;
  return editing && secret.trim() === '' ? { url, events, active } : { url, secret, events, active };
}

function formOf(hook: Webhook): WebhookForm {
  return { url: hook.url, secret: '', events: [...hook.events], active: hook.active };
}

/** Every event with its words (`webhooks:events`), the code kept beside them. */
function eventChoices(t: Translate) {
  return WEBHOOK_EVENTS.map((value) => ({ value, name: t(`webhooks:events.${value}.name`), description: t(`webhooks:events.${value}.description`) }));
}

/** The webhook form's labels in the page's language; its errors start with LABELS.webhook's English words, which render translates. */
function webhookLabels(t: Translate): Record<keyof typeof LABELS.webhook, string> {
  return Object.fromEntries(Object.keys(LABELS.webhook).map((field) => [field, t(`webhooks:labels.${field}`)])) as Record<keyof typeof LABELS.webhook, string>;
}

/** A webhook's events in words: every one of them is "All events". */
function eventsInWords(events: readonly WebhookEvent[], t: Translate): string {
  if (events.length === WEBHOOK_EVENTS.length) return t('webhooks:list.allEvents');
  return events.map((event) => t(`webhooks:events.${event}.name`)).join(t('webhooks:list.separator'));
}

/** A JSON body indented for reading; anything else as it came. */
function prettyJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

/**
 * A delivery as Recent deliveries in `lang` shows it: what the API shows of it, the request's
 * headers as lines (the signature masked: the page never computes one), its body indented, and
 * the error in the reader's language.
 */
function presentDeliveryOnPage(delivery: Delivery, lang: Language) {
  const { request, response, ...shown } = presentDelivery(delivery);
  return {
    ...shown,
    requestHeaders: [...Object.entries(request.headers), ['X-Horizon-Signature-256', 'sha256=…']],
    requestBody: prettyJson(request.body),
    responseStatus: response?.status ?? null,
    responseBody: response?.body ?? null,
    error: delivery.error === null ? null : translateMessage(delivery.error, lang),
  };
}

/** A path segment that cannot be a delivery id is the same as an unknown delivery. */
function deliveryId(ctx: Ctx): number {
  const id = parseId(ctx.params.deliveryId);
  if (id === undefined) throw new NotFoundError('This webhook has no delivery at this address.');
  return id;
}

/**
 * Group settings → Webhooks: where a group's events are POSTed. Owners only, by the same policy
 * as the API (the services check it again on every change). The new-webhook form carries a
 * one-time key, and every POST redirects to a page (Post/Redirect/Get). The secret is shown only
 * on the form that sets it: the pages never show a stored one.
 */
export function webhookRoutes(deps: WebDeps): Router {
  const { db } = deps;
  const hookDeps: WebhookDeps = { db, cipher: deps.cipher, allowPrivate: deps.config.webhooks.allowPrivate };
  const router = new Router({ prefix: '/groups/:path/settings/webhooks' });
  const ownersOnly = pageGroupLoader(deps)('manage-webhooks');

  const webhooksUrl = (group: GroupRow) => `/groups/${encodeURIComponent(group.path)}/settings/webhooks`;
  const webhookUrl = (group: GroupRow, id: number) => `${webhooksUrl(group)}/${id}`;

  const notice = (ctx: Ctx, t: Translate) => pageNotice(ctx, t, NOTICES, 'webhooks');
  const loadWebhook = groupRecordLoader('webhook', (access, id) => webhookOfGroup(db, access, id), 'This group has no webhook at this address.');
  const webhookOf = (ctx: Ctx) => ctx.state.webhook as Webhook;

  /** The form's errors, each beside its field; any other error goes to the error page. */
  function fieldErrors(err: unknown): Record<string, string> {
    const errors = formErrors(err, LABELS.webhook);
    if (!errors || !Object.keys(errors).every((field) => Object.hasOwn(LABELS.webhook, field))) throw err;
    return errors;
  }

  /** What both forms show besides their values. */
  function formLocals(t: Translate) {
    return { labels: webhookLabels(t), eventChoices: eventChoices(t), limits: { minSecret: MIN_SECRET_LENGTH, maxSecret: MAX_SECRET_LENGTH, maxUrl: MAX_URL_LENGTH } };
  }

  router.get('/', ownersOnly, async (ctx) => {
    const access = accessOf(ctx);
    const { group } = access;
    const [hooks, latest] = await Promise.all([webhooksOf(db, access), latestDeliveriesOf(db, access)]);
    const t = pageT(ctx);
    render(ctx, 'groups/settings/webhooks', {
      title: t('webhooks:titles.list', { group: group.name }),
      group,
      tab: 'webhooks',
      webhooksUrl: webhooksUrl(group),
      webhooks: hooks.map((hook) => {
        const last = latest.get(hook.id);
        return {
          ...hook,
          href: webhookUrl(group, hook.id),
          eventsInWords: eventsInWords(hook.events, t),
          latest: last ? { state: last.state, at: toIso(last.lastAttemptAt ?? last.createdAt), responseStatus: last.responseStatus } : null,
        };
      }),
      flash: notice(ctx, t),
    });
  });

  function renderNew(ctx: Ctx, group: GroupRow, extra: { values?: WebhookForm; errors?: Record<string, string>; onceKey?: string } = {}, status = 200) {
    const t = pageT(ctx);
    render(ctx, 'groups/settings/webhook-new', {
      title: t('webhooks:titles.new', { group: group.name }),
      group,
      tab: 'webhooks',
      webhooksUrl: webhooksUrl(group),
      values: extra.values ?? { url: '', secret: freshSecret(), events: [...WEBHOOK_EVENTS], active: true },
      errors: extra.errors ?? {},
      onceKey: extra.onceKey ?? issueOnceKey(ctx),
      ...formLocals(t),
    }, status);
  }

  // The form carries a fresh secret: the page is not kept by the browser (render's no-store).
  router.get('/new', ownersOnly, (ctx) => {
    renderNew(ctx, accessOf(ctx).group);
  });

  router.post('/new', ownersOnly, async (ctx) => {
    const access = accessOf(ctx);
    const { group } = access;
    const values = webhookForm(ctx);
    let outcome: { created: Webhook } | { repeated: string | undefined };
    try {
      outcome = await createOnce(db, () => createWebhook(hookDeps, access, webhookInput(values, false), submissionOf(ctx, 'webhook')));
    } catch (err) {
      renderNew(ctx, group, { values, errors: fieldErrors(err), onceKey: sentOnceKey(ctx) }, (err as AppError).status);
      return;
    }
    if ('created' in outcome) {
      ctx.redirect(`${webhookUrl(group, outcome.created.id)}?notice=created`);
      return;
    }
    const id = parseId(outcome.repeated);
    ctx.redirect(id === undefined ? webhooksUrl(group) : `${webhookUrl(group, id)}?notice=repeated`);
  });

  async function renderWebhook(
    ctx: Ctx,
    access: GroupAccess,
    hook: Webhook,
    extra: { values?: WebhookForm; errors?: Record<string, string> } = {},
    status = 200,
  ) {
    const { group } = access;
    const t = pageT(ctx);
    const deliveries = await deliveriesOf(db, access, hook.id);
    render(ctx, 'groups/settings/webhook', {
      title: t('webhooks:titles.webhook', { group: group.name }),
      group,
      tab: 'webhooks',
      webhooksUrl: webhooksUrl(group),
      webhookUrl: webhookUrl(group, hook.id),
      webhook: { ...hook, createdAt: toIso(hook.createdAt), eventsInWords: eventsInWords(hook.events, t) },
      deliveries: deliveries.map((delivery) => presentDeliveryOnPage(delivery, pageLanguage(ctx))),
      recentLimit: RECENT_DELIVERIES,
      values: extra.values ?? formOf(hook),
      errors: extra.errors ?? {},
      flash: notice(ctx, t),
      ...formLocals(t),
    }, status);
  }

  router.get('/:id', ownersOnly, loadWebhook, async (ctx) => {
    await renderWebhook(ctx, accessOf(ctx), webhookOf(ctx));
  });

  router.post('/:id', ownersOnly, loadWebhook, async (ctx) => {
    const access = accessOf(ctx);
    const hook = webhookOf(ctx);
    const values = webhookForm(ctx);
    try {
      await updateWebhook(hookDeps, access, hook.id, webhookInput(values, true));
    } catch (err) {
      await renderWebhook(ctx, access, hook, { values, errors: fieldErrors(err) }, (err as AppError).status);
      return;
    }
    ctx.redirect(`${webhookUrl(access.group, hook.id)}?notice=saved`);
  });

  // Deleting asks first on a page of its own, as deleting an application does.
  router.get('/:id/delete', ownersOnly, loadWebhook, (ctx) => {
    const { group } = accessOf(ctx);
    const hook = webhookOf(ctx);
    render(ctx, 'groups/settings/webhook-delete', {
      title: pageT(ctx)('webhooks:titles.delete', { group: group.name }),
      group,
      tab: 'webhooks',
      webhook: hook,
      webhookUrl: webhookUrl(group, hook.id),
    });
  });

  router.post('/:id/delete', ownersOnly, loadWebhook, async (ctx) => {
    const access = accessOf(ctx);
    await deleteWebhook(db, access, webhookOf(ctx).id);
    ctx.redirect(`${webhooksUrl(access.group)}?notice=deleted`);
  });

  // The address a Redeliver button posts to, opened on its own: the webhook.
  router.get('/:id/deliveries/:deliveryId/redeliver', ownersOnly, loadWebhook, (ctx) => {
    ctx.redirect(webhookUrl(accessOf(ctx).group, webhookOf(ctx).id));
  });

  router.post('/:id/deliveries/:deliveryId/redeliver', ownersOnly, loadWebhook, async (ctx) => {
    const access = accessOf(ctx);
    const hook = webhookOf(ctx);
    try {
      await redeliver(db, access, hook.id, deliveryId(ctx));
    } catch (err) {
      throw err instanceof NotFoundError ? new NotFoundError('This webhook has no delivery at this address.') : err;
    }
    ctx.redirect(`${webhookUrl(access.group, hook.id)}?notice=redelivered`);
  });

  return router;
}
