// The error the embedded server's routes (examples/embedded-server.ts, examples/web/server/)
// throw for a request they refuse; it is answered as JSON { error: name, message }.

/** A request the routes refuse, with its HTTP status. */
export class HttpError extends Error {
  readonly status: number;
  constructor(status: number, name: string, message: string) {
    super(message);
    this.name = name;
    this.status = status;
  }
}
