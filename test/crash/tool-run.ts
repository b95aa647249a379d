import type { Fact } from '../../events/facts.ts';
import { draft, logBuilder } from '../events/log-builder.ts';

/** A run whose step `s1` called c1 and c2; `upTo` cuts it after that many facts. */
export function toolRun(upTo?: number): Fact[] {
  return toolLog(upTo).facts;
}

/** The builder of `toolRun`, cut after `upTo` facts, to go on differently. */
export function toolLog(upTo?: number) {
  const log = logBuilder();
  log.startRun('go');
  log.add(draft.stepStarted('s1'), 'requesting.streaming');
  log.add(
    draft.stepCompleted('s1', { calls: [draft.call('c1'), draft.call('c2')] }),
    'settlingTools.deciding',
  );
  log.add(draft.allowed('c1'), 'settlingTools.deciding');
  log.add(draft.allowed('c2'), 'settlingTools.running');
  log.add(draft.started('c1'), 'settlingTools.running');
  log.add(draft.started('c2'), 'settlingTools.running');
  log.add(draft.settled('c1', 'one'), 'settlingTools.running');
  log.add(draft.settled('c2', 'two'), 'projecting');
  log.add(draft.stepStarted('s2'), 'requesting.streaming');
  log.add(draft.stepCompleted('s2', { content: [{ type: 'text', text: 'Done.' }] }), 'terminal');
  log.add(draft.ended(), 'terminal');
  if (upTo !== undefined) log.facts.splice(upTo);
  return log;
}
