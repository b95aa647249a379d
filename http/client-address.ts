// The client's address beside a Web `Request`, which has no place for it. The Node adapter
// records it; `authorize` reads it with `clientAddress(request)`.

const addresses = new WeakMap<Request, string>();

/** Records the remote address of the client that sent `request` (the Node adapter does this). */
export function setClientAddress(request: Request, address: string | undefined): void {
  if (address !== undefined) addresses.set(request, address);
}

/**
 * The remote address of the client that sent `request`, as its server adapter recorded it
 * (`toWebRequest` does); `undefined` when no adapter did (then the default `authorize`
 * refuses: give it `clientAddress` or a `token`).
 */
export function clientAddress(request: Request): string | undefined {
  return addresses.get(request);
}
