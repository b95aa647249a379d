import { hasChromium, noChromiumLine } from './chromium.ts';

/** Says, once per `npm test`, that the browser tests were skipped and why (never silently). */
export default function setup() {
  if (!hasChromium) process.stdout.write(`${noChromiumLine}\n`);
}
