import { presentClientRegistration } from '../presenters/client-registration.js';
import type { Actor } from '../services/context.js';
import { clientRegistrationSettings, setClientRegistration, type ClientRegistrationSettings } from '../services/client-registration/settings.js';
import type { Command, CommandContext, CommandResult } from './commands.js';
import { UsageError } from './errors.js';

/**
 * `idp client-registration show | set`: whether clients may register themselves (Client ID
 * Metadata Documents, Dynamic Client Registration) and the group they belong to, through the same
 * service as Admin → Client registration.
 */

/** The CLI's changes are recorded in the site's audit log with no user and `via: cli`. */
const ADMIN: Actor = { userId: 0, ip: null, admin: true };

/** `on` or `off`; undefined when the flag was not given (the setting stays as it is). */
function onOff(value: string | undefined, flag: string): boolean | undefined {
  if (value === undefined) return undefined;
  if (value === 'on') return true;
  if (value === 'off') return false;
  throw new UsageError(`--${flag}: must be on or off`);
}

function result(ctx: CommandContext, settings: ClientRegistrationSettings, first?: string): CommandResult {
  const json = presentClientRegistration(settings, ctx.config.issuer);
  const word = (on: boolean) => (on ? 'on' : 'off');
  return {
    json,
    text: [
      ...(first ? [first] : []),
      `metadata documents:     ${word(json.metadataDocuments)}`,
      `dynamic registration:   ${word(json.dynamicRegistration)}`,
      `group:                  ${json.group ?? 'none'}`,
      `registration endpoint:  ${json.registrationEndpoint}`,
    ].join('\n'),
  };
}

async function show(ctx: CommandContext): Promise<CommandResult> {
  return result(ctx, await clientRegistrationSettings(ctx.db));
}

async function set(ctx: CommandContext): Promise<CommandResult> {
  const { flags, db } = ctx;
  const metadataDocuments = onOff(flags.string('metadata-documents'), 'metadata-documents');
  const dynamicRegistration = onOff(flags.string('dynamic-registration'), 'dynamic-registration');
  const group = flags.string('group');
  if (metadataDocuments === undefined && dynamicRegistration === undefined && group === undefined) {
    throw new UsageError('nothing to change: give --metadata-documents on|off, --dynamic-registration on|off or --group <path>');
  }
  // A setting not named stays as it is.
  const now = await clientRegistrationSettings(db);
  const settings = await setClientRegistration(db, ADMIN, {
    metadataDocuments: metadataDocuments ?? now.metadataDocuments,
    dynamicRegistration: dynamicRegistration ?? now.dynamicRegistration,
    group: group ?? now.group?.path ?? '',
  });
  return result(ctx, settings, 'client registration saved');
}

export const clientRegistrationCommands: Command[] = [
  {
    name: 'client-registration show',
    usage: '',
    summary: 'Show whether clients may register themselves (Client ID Metadata Documents, Dynamic Client Registration), the group they belong to, and the registration endpoint.',
    strings: [],
    run: show,
  },
  {
    name: 'client-registration set',
    usage: '[--metadata-documents on|off] [--dynamic-registration on|off] [--group <path>]',
    summary: 'Turn either way of self-registration on or off, and choose the group such clients belong to (required while either is on; --group "" for none). Anyone can then register a client; the consent page says it was not reviewed. A setting not named stays as it is.',
    strings: ['metadata-documents', 'dynamic-registration', 'group'],
    run: set,
  },
];
