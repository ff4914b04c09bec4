import { parseArgs, type ParseArgsConfig } from 'node:util';
import { UsageError } from './errors.js';

/** The flags a command takes; `--json` and `--help` are added to every command. */
export interface FlagSpec {
  strings: readonly string[];
  booleans?: readonly string[];
  /** Flags that may be given more than once, each time with one value (read with `list`). */
  lists?: readonly string[];
  /** The one argument the command takes before or among its flags (`user disable alice`): its name in messages. */
  argument?: string;
}

type Options = NonNullable<ParseArgsConfig['options']>;

/** Parsed flags, read by name. */
export class Flags {
  constructor(
    private readonly values: Record<string, unknown>,
    private readonly given: string | undefined = undefined,
  ) {}

  /** The command's one argument (see FlagSpec.argument); parsing has made sure it was given. */
  argument(): string {
    return this.given ?? '';
  }

  string(name: string): string | undefined {
    const value = this.values[name];
    return typeof value === 'string' ? value : undefined;
  }

  required(name: string): string {
    const value = this.string(name);
    if (value === undefined) throw new UsageError(`--${name} is required`);
    return value;
  }

  /** Every value of a repeatable flag, in the order given; none given is an empty list. */
  list(name: string): string[] {
    const value = this.values[name];
    return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
  }

  has(name: string): boolean {
    return this.values[name] === true;
  }
}

/**
 * Strict parsing: an unknown flag, a missing value, a stray argument or a repeated flag is an
 * error, except for the flags a command declares repeatable and the one argument it declares.
 */
export function parseFlags(args: string[], spec: FlagSpec): Flags {
  const options: Options = { json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } };
  for (const name of spec.strings) options[name] = { type: 'string' };
  for (const name of spec.booleans ?? []) options[name] = { type: 'boolean' };
  for (const name of spec.lists ?? []) options[name] = { type: 'string', multiple: true };

  let parsed;
  try {
    parsed = parseArgs({ args, options, strict: true, allowPositionals: spec.argument !== undefined, tokens: true });
  } catch (err) {
    throw explain(err, args, options);
  }
  const [given, extra] = parsed.positionals;
  if (extra !== undefined) throw new UsageError(`unexpected argument ${JSON.stringify(extra)}; flags take the form --name value`);
  if (spec.argument !== undefined && (given === undefined || given === '') && !parsed.values.help) {
    throw new UsageError(`<${spec.argument}> is required`);
  }
  // parseArgs keeps the last of a repeated flag; with two values on the line, refuse to guess.
  const seen = new Set<string>();
  for (const token of parsed.tokens) {
    if (token.kind !== 'option' || spec.lists?.includes(token.name)) continue;
    if (seen.has(token.name)) throw new UsageError(`${token.rawName}: given more than once`);
    seen.add(token.name);
  }
  return new Flags(parsed.values, given);
}

/**
 * parseArgs decides whether the line is wrong; its tokens (from a lenient second pass) tell us
 * which argument, so the message names the flag without depending on Node's wording.
 */
function explain(err: unknown, args: string[], options: Options): unknown {
  if (!(err instanceof Error) || !String((err as { code?: string }).code).startsWith('ERR_PARSE_ARGS')) return err;
  const { tokens } = parseArgs({ args, options, strict: false, allowPositionals: true, tokens: true });
  for (const token of tokens) {
    if (token.kind === 'positional') {
      return new UsageError(`unexpected argument ${JSON.stringify(token.value)}; flags take the form --name value`);
    }
    if (token.kind !== 'option') continue;
    if (token.name === 'password') {
      return new UsageError(
        `${token.rawName}: a password on the command line is visible to other users and kept in shell history; pipe it on standard input with --password-stdin`,
      );
    }
    const option = options[token.name];
    if (!option) return new UsageError(`${token.rawName}: unknown flag; see --help`);
    if (option.type === 'string' && (token.value === undefined || (!token.inlineValue && token.value.startsWith('-')))) {
      return new UsageError(`${token.rawName}: a value is required`);
    }
    if (option.type === 'boolean' && token.value !== undefined) return new UsageError(`${token.rawName}: takes no value`);
  }
  return new UsageError(err.message.split('\n')[0]!);
}
