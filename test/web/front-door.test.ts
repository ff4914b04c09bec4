import { describeEachProfile, useIdp } from '../helpers/app.js';
import { Browser, signIn } from '../helpers/browser.js';
import { makeUser } from '../helpers/factories.js';

/** What a person meets first: the site's root. */
describeEachProfile('Pages: the front door', (profile) => {
  const idp = useIdp(profile);

  it('sends someone signed out from / to Sign in (303), and someone signed in to their groups', async () => {
    await new Browser(idp.url).get('/').expect(303, '/login');
    const signedIn = await signIn(idp.url, await makeUser(idp.db));
    await signedIn.get('/').expect(302, '/groups');
  });
});
