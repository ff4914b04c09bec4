// oidc-provider's private state of a Provider instance, read by path (the package has no exports
// map) in keystore.ts alone, which checks its shape at start.
declare module 'oidc-provider/lib/helpers/weak_cache.js' {
  export default function instance(provider: object): unknown;
}
