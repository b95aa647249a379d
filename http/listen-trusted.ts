import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isLoopbackHostName } from './host-names.ts';
import { InsecureBindError } from './http-errors.ts';
import type { RequestGuard } from './request-guard.ts';

/**
 * Listens on `host:port`: loopback (`127.0.0.1`) by default; a non-loopback host (`0.0.0.0`,
 * an interface's address) is refused with `InsecureBindError` unless `guard` authenticates
 * (a `token` or an `authorize`), since anyone who can reach it could act. Port 0 picks a free one.
 *
 * @example
 * const { url } = await listenTrusted(server, { guard, port: 0 });
 */
export async function listenTrusted(
  server: Server,
  { guard, port = 3000, host = '127.0.0.1' }: { guard: RequestGuard; port?: number; host?: string },
): Promise<{ url: string; host: string; port: number }> {
  if (!isLoopbackHostName(host) && !guard.authenticates) {
    throw new InsecureBindError({
      host,
      message: `Refusing to listen on ${host}, which is not loopback, without authentication: set a token (or authorize) on the RequestGuard, or listen on 127.0.0.1.`,
    });
  }
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return { url: `http://${shown}:${address.port}`, host: address.address, port: address.port };
}
