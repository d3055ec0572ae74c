// zulip-js ships no types; the tests use it as the untyped client it is.
declare module 'zulip-js' {
  const zulip: (config: { username?: string; apiKey?: string; password?: string; realm?: string; zuliprc?: string }) => Promise<any>;
  export default zulip;
}
