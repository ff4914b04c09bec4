import type Router from '@koa/router';
import type { Context } from 'koa';
import { registrationEndpoint } from '../presenters/client-registration.js';
import { clientRegistrationSettings, setClientRegistration, type ClientRegistrationSettings } from '../services/client-registration/settings.js';
import { pageT, translator, type Translate } from '../i18n.js';
import { actorOf, formFields, type WebDeps } from './context.js';
import { formErrors, formStatus } from './form-errors.js';
import { render } from './render.js';

/**
 * Admin → Client registration: whether clients may register themselves (by a Client ID Metadata
 * Document, by Dynamic Client Registration) and the group such clients belong to. Registered on
 * the Admin area's router, so that only site administrators reach it.
 */

const PATH = '/client-registration';

/** The form's fields, named as the service's input; their labels are admin.json's `clientRegistration.labels`. */
const FIELDS = ['metadataDocuments', 'dynamicRegistration', 'group'] as const;

/** The form's labels in `t`'s language; in English, the words its errors start with (formErrors), which messages-admin translates. */
function labelsOf(t: Translate = translator('en')): Record<string, string> {
  return Object.fromEntries(FIELDS.map((field) => [field, t(`admin:clientRegistration.labels.${field}`)]));
}

/** The settings as the form shows them. */
function valuesOf(settings: ClientRegistrationSettings): Record<string, string | boolean> {
  return { metadataDocuments: settings.metadataDocuments, dynamicRegistration: settings.dynamicRegistration, group: settings.group?.path ?? '' };
}

/** A posted form as the service's input: an unchecked box sends nothing, which is off. */
function inputOf(fields: Record<string, string>) {
  return { metadataDocuments: fields.metadataDocuments !== undefined, dynamicRegistration: fields.dynamicRegistration !== undefined, group: fields.group ?? '' };
}

export function adminClientRegistrationRoutes(router: Router, deps: WebDeps): void {
  const { db } = deps;

  function renderPage(ctx: Context, options: { settings: ClientRegistrationSettings; values: Record<string, string | boolean>; errors?: Record<string, string>; flash?: string | null; status?: number }) {
    const t = pageT(ctx);
    render(ctx, 'admin/client-registration', {
      title: t('admin:titles.clientRegistration'),
      tab: 'client-registration',
      settings: options.settings,
      values: options.values,
      errors: options.errors ?? {},
      labels: labelsOf(t),
      endpoint: registrationEndpoint(deps.config.issuer),
      flash: options.flash ?? null,
    }, options.status ?? 200);
  }

  router.get(PATH, async (ctx) => {
    const settings = await clientRegistrationSettings(db);
    const saved = ctx.query.notice === 'saved';
    renderPage(ctx, { settings, values: valuesOf(settings), flash: saved ? pageT(ctx)('admin:clientRegistration.saved') : null });
  });

  router.post(PATH, async (ctx) => {
    const fields = formFields(ctx);
    const input = inputOf(fields);
    try {
      await setClientRegistration(db, actorOf(ctx), input);
    } catch (err) {
      const errors = formErrors(err, labelsOf());
      if (!errors) throw err;
      // What was typed stays, for the administrator to correct.
      renderPage(ctx, { settings: await clientRegistrationSettings(db), values: input, errors, status: formStatus(err) });
      return;
    }
    ctx.redirect(`/admin${PATH}?notice=saved`);
  });
}
