import { main } from './main.js';

/** The admin CLI: `npm run -s idp -- <command>`. */
process.exitCode = await main(process.argv.slice(2), {
  stdin: process.stdin,
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
});
