import { z } from 'zod';

/** The client registration switches as the API names them (GET and PUT /admin/client-registration). */
export const clientRegistrationJson = z.object({
  metadataDocuments: z.boolean().describe('Client ID Metadata Documents are accepted: a client_id that is an https URL is fetched and used as a public client'),
  dynamicRegistration: z.boolean().describe('Dynamic Client Registration (RFC 7591) of public clients is accepted at `registrationEndpoint`'),
  group: z.string().nullable().describe('The path of the group such clients belong to; null when none is chosen (or it was deleted), which keeps both off'),
  registrationEndpoint: z.string().describe('Where clients send a dynamic registration; clients that use metadata documents need nothing from the site'),
});
export type ClientRegistrationJson = z.infer<typeof clientRegistrationJson>;

/** The address Dynamic Client Registration (RFC 7591) posts to. */
export function registrationEndpoint(issuer: string): string {
  return `${issuer.replace(/\/+$/, '')}/login/oauth/register`;
}

/** The switches as the service reads them (services/client-registration/settings.ts), for the API. */
export function presentClientRegistration(settings: { metadataDocuments: boolean; dynamicRegistration: boolean; group: { path: string } | null }, issuer: string): ClientRegistrationJson {
  return {
    metadataDocuments: settings.metadataDocuments,
    dynamicRegistration: settings.dynamicRegistration,
    group: settings.group?.path ?? null,
    registrationEndpoint: registrationEndpoint(issuer),
  };
}
