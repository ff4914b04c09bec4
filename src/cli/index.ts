import { main } from './main.js';

/** The admin CLI of CONTRACT §9: `npm run -s idp -- <command>`. */
process.exitCode = await main(process.argv.slice(2), {
  stdin: process.stdin,
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
});
