import { loadConfig } from '../config.js';
import { withDatabase } from '../services/database.js';
import { commands, type Command } from './commands.js';
import { describeFailure, UsageError } from './errors.js';
import { parseFlags } from './flags.js';

export interface CliIo {
  stdin: NodeJS.ReadableStream;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  env: Record<string, string | undefined>;
}

const PROGRAM = 'npm run -s idp --';

export function usage(): string {
  const list = commands.map((c) => `  ${[c.name, c.usage].filter(Boolean).join(' ')}\n      ${c.summary}`);
  return [
    `usage: ${PROGRAM} <command> [flags]`,
    '',
    'commands:',
    ...list,
    '',
    'Every command takes --json (print the created record as one JSON object) and --help.',
    'Configuration comes from the environment (DATABASE_URL, …); the database is migrated first.',
    'Passwords are never taken from the command line:',
    `  printf '%s\\n' "$PASSWORD" | ${PROGRAM} user create --username alice --email alice@example.com --password-stdin`,
    'Exit status: 0 done, 2 bad input or environment, 1 anything else (provider test and provider check: also when the directory fails the test).',
    '',
  ].join('\n');
}

function commandUsage(command: Command): string {
  return [`usage: ${PROGRAM} ${[command.name, command.usage, '[--json]'].filter(Boolean).join(' ')}`, `  ${command.summary}`, ''].join('\n');
}

/** The command named by the first one or two words, and the arguments after it. */
function findCommand(argv: string[]): { command: Command; args: string[] } {
  for (const words of [2, 1]) {
    const name = argv.slice(0, words).join(' ');
    const command = commands.find((c) => c.name === name);
    if (command) return { command, args: argv.slice(words) };
  }
  const names = commands.map((c) => c.name).join(', ');
  if (!argv.length) throw new UsageError(`a command is required; try: ${names} (or --help)`);
  if (argv[0]!.startsWith('-')) throw new UsageError(`the command comes before its flags; try: ${names}`);
  const isTopic = commands.some((c) => c.name.startsWith(`${argv[0]} `));
  const given = isTopic && argv[1] && !argv[1].startsWith('-') ? `${argv[0]} ${argv[1]}` : argv[0];
  throw new UsageError(`unknown command ${JSON.stringify(given)}; try: ${names}`);
}

/**
 * Runs one command and returns the exit code. Order: the command line, then the environment,
 * then the database (opened, migrated, and always closed so the process exits promptly).
 */
export async function main(argv: string[], io: CliIo): Promise<number> {
  try {
    if (argv[0] === '--help' || argv[0] === '-h' || argv[0] === 'help') {
      io.stdout.write(usage());
      return 0;
    }
    const { command, args } = findCommand(argv);
    const flags = parseFlags(args, command);
    if (flags.has('help')) {
      io.stdout.write(commandUsage(command));
      return 0;
    }
    const config = loadConfig(io.env);
    // knex's pool warnings would go to stdout, which is for results; the failure reaches stderr once.
    const result = await withDatabase(config.databaseUrl, (db, applied) =>
      command.run({ db, flags, applied, stdin: io.stdin, keysSecret: config.keysSecret, config }), config.databasePooling);
    io.stdout.write(`${flags.has('json') ? JSON.stringify(result.json) : result.text}\n`);
    if (result.warning) io.stderr.write(`idp: warning: ${result.warning}\n`);
    return result.exitCode ?? 0;
  } catch (err) {
    const { line, exitCode } = describeFailure(err);
    io.stderr.write(`idp: ${line}\n`);
    return exitCode;
  }
}
