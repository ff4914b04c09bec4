/**
 * A whole authorization flow against an identity provider that runs elsewhere (the container
 * image, in .ci/container.sh): the example third-party server (examples/third-party-server) runs
 * here on EXAMPLE_PORT, registered there as an application with the callback
 * http://localhost:EXAMPLE_PORT/callback; a browser without a screen opens the example, is sent
 * to authorize, signs in as FLOW_USERNAME, authorizes, and comes back to the example, which
 * exchanges the code (PKCE, `iss` checked) and lists the person's groups from /apis/v2/groups
 * with the token. Passes when FLOW_GROUP_NAME is on that page.
 *
 *   IDP_URL=http://localhost:3000 CLIENT_ID=… CLIENT_SECRET=… EXAMPLE_PORT=4000 \
 *   FLOW_USERNAME=… FLOW_PASSWORD=… FLOW_GROUP_NAME=… npx tsx test/container/flow.ts
 *
 * A script, not a mocha suite: it needs a server started outside it, and prints one line.
 */
import { once } from 'node:events';
import { createServer } from 'node:http';
import { createExampleApp, SESSION_COOKIE, type ExampleSession } from '../../examples/third-party-server/server.js';
import { Browser } from '../helpers/browser.js';
import { passProvider } from '../helpers/oauth.js';

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`set ${name} (see the comment at the top of test/container/flow.ts)`);
  return value;
}

async function main(): Promise<void> {
  const issuer = required('IDP_URL').replace(/\/+$/, '');
  const port = Number(required('EXAMPLE_PORT'));
  const person = { username: required('FLOW_USERNAME'), password: required('FLOW_PASSWORD') };
  const groupName = required('FLOW_GROUP_NAME');
  const exampleUrl = `http://localhost:${port}`;

  const sessions = new Map<string, ExampleSession>();
  const example = await createExampleApp({ issuer, clientId: required('CLIENT_ID'), clientSecret: required('CLIENT_SECRET'), redirectUri: `${exampleUrl}/callback`, sessions });
  const server = createServer(example.callback());
  server.listen(port, '127.0.0.1');
  await once(server, 'listening');
  try {
    const browser = new Browser(issuer, { also: [exampleUrl] });
    const page = await passProvider(browser, `${exampleUrl}/`, person);
    const landed = `${page.status} at ${page.url}`;
    if (page.status !== 200 || page.url.toString() !== `${exampleUrl}/`) throw new Error(`the flow ended ${landed}, not 200 at ${exampleUrl}/: ${page.text.slice(0, 300)}`);
    if (!page.text.includes(groupName)) throw new Error(`the example's page does not list the group "${groupName}": ${page.text.slice(0, 500)}`);
    const token = sessions.get(browser.cookies(exampleUrl).get(SESSION_COOKIE) ?? '')?.accessToken ?? '';
    if (!token.startsWith('ho_')) throw new Error('the example holds no ho_ token after the flow');
    console.log(`flow: signed in as ${person.username} through ${exampleUrl}, authorized, code exchanged; /apis/v2/groups lists "${groupName}"`);
  } finally {
    server.closeAllConnections();
    server.close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`flow: FAILED: ${(err as Error).message}\n`);
  process.exit(1);
});
