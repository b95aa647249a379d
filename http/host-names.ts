// Host names and addresses, as the trust layer judges them. No DNS: only the text of a header
// or of a socket's address.

const ipv4 = /^\d{1,3}(\.\d{1,3}){3}$/;

/** True for a loopback socket address: 127.0.0.0/8, ::1 and their IPv4-mapped forms. */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (address === undefined) return false;
  const bare = address.replace(/^\[|\]$/g, '').toLowerCase();
  if (bare === '::1' || bare === '0:0:0:0:0:0:0:1') return true;
  const v4 = bare.startsWith('::ffff:') ? bare.slice('::ffff:'.length) : bare;
  return ipv4.test(v4) && v4.startsWith('127.');
}

/** True for a name that always means this machine: `localhost`, `*.localhost` or a loopback address. */
export function isLoopbackHostName(name: string): boolean {
  const lower = name.toLowerCase().replace(/\.$/, '');
  return lower === 'localhost' || lower.endsWith('.localhost') || isLoopbackAddress(lower);
}

/** True for an IP literal (`10.0.0.5`, `[fe80::1]`): no DNS answer stands behind it, so it cannot be rebound. */
export function isIpLiteral(name: string): boolean {
  return ipv4.test(name) || (name.startsWith('[') && name.endsWith(']'));
}

/**
 * The host name of a `Host` header value (`name`, `name:port`, `[v6]:port`), lower-cased, IPv4
 * numbers normalized as a browser would (`0x7f.1` is `127.0.0.1`); `undefined` when it is not
 * a host at all (a path, a user, a bad port).
 */
export function hostNameOf(header: string): string | undefined {
  if (header === '' || /[/?#@\\\s]/.test(header)) return undefined;
  let url: URL;
  try {
    url = new URL(`http://${header}`);
  } catch {
    return undefined;
  }
  if (url.pathname !== '/' || url.username !== '' || url.search !== '') return undefined;
  return url.hostname.replace(/\.$/, '');
}

/**
 * True when `name` is one of `allowed`: exact names, or `.example.com` for example.com and
 * every name under it (as Vite's `allowedHosts`).
 */
export function hostNameListed(name: string, allowed: readonly string[]): boolean {
  return allowed.some((entry) => {
    const lower = entry.toLowerCase().replace(/\.$/, '');
    if (lower.startsWith('.')) return name === lower.slice(1) || name.endsWith(lower);
    return name === lower;
  });
}
