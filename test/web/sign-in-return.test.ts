import { expect } from 'chai';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { Browser } from '../helpers/browser.js';

/** A signed-out visitor of a page is sent to sign in, with the page to come back to when it can be kept. */
describeEachProfile('Pages: the way back after signing in', (profile) => {
  const idp = useIdp(profile);

  it('carries the page asked for to the sign-in page', async () => {
    await new Browser(idp.url).get('/account/settings/tokens?notice=x').expect(302, `/login?return_to=${encodeURIComponent('/account/settings/tokens?notice=x')}`);
  });

  it('leaves out an address too long to come back to, so that the answer\'s head stays small', async () => {
    // Encoded once more, a 12 KB address made a Location of 20 KB: past what Node's client (16 KiB) reads.
    const long = `/account/settings/tokens?q=${'%C3%A9'.repeat(2000)}`;
    const page = await new Browser(idp.url).get(long).expect(302, '/login');
    expect(page.headers.get('location')).to.equal('/login');
  });
});
