import { memoryStore } from '../store/memory-store.ts';
import { conversationRuntime, runStreamText, runTurnlog } from './turnlog-side.ts';

const mode = process.argv[2];
const steps = 20;
const runtime = conversationRuntime({ store: memoryStore(), steps });
const n = 300;
const t = performance.now();
for (let i = 0; i < n; i++) {
  if (mode === 'st') await runStreamText(steps);
  else await runTurnlog({ runtime, sessionId: `s${i}`, steps });
}
console.log(mode, (performance.now() - t) / n / steps, 'ms/step');
