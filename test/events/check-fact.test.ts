import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { factProblem } from '../../events/check-fact.ts';
import { appendSchemas, factTypes, readSchemas } from '../../events/fact-schemas.ts';
import type { Fact } from '../../events/facts.ts';
import { factAt, loadSampleLog, sampleLogNames } from './sample-logs.ts';

const allSampleFacts = sampleLogNames.flatMap((name) => loadSampleLog(name));
const withoutSeq = ({ seq: _seq, ...rest }: Fact) => rest;
const multiTool = loadSampleLog('multi-tool');
const completed = factAt(multiTool, 3, 'step.completed');

describe('the fact schemas', () => {
  it('accept every fact of the frozen sample logs, stored and (without its seq) appended again', () => {
    for (const fact of allSampleFacts) {
      expect(factProblem(fact, { stored: true }), `${fact.type} seq ${fact.seq}`).toBeUndefined();
      expect(factProblem(withoutSeq(fact), { stored: false })).toBeUndefined();
    }
  });

  it('cover every fact type with one schema of each kind', () => {
    expect(Object.keys(readSchemas.facts)).toEqual(factTypes);
    expect(factTypes).toHaveLength(18);
  });

  it('name the fact type and the missing field (a step.completed without toolCalls)', () => {
    const { toolCalls: _toolCalls, ...broken } = completed;
    expect(factProblem(broken, { stored: true })).toBe(
      'step.completed field toolCalls is missing (expected array)',
    );
  });

  it.each([
    [
      'a nested enum',
      { toolCalls: [{ ...completed.toolCalls[0], proof: 'maybe' }] },
      `step.completed field toolCalls[0].proof must be one of "raw-bytes", "atomic", "whole-request", not "maybe"`,
    ],
    [
      'a content part of no known type',
      { content: [{ type: 'image', text: 'x' }] },
      'step.completed field content[0].type must be one of "text", "reasoning", "provider-tool-call", "provider-tool-result", not "image"',
    ],
    [
      'a wrong type deep inside',
      { usage: { ...completed.usage, inputTokens: '12' } },
      'step.completed field usage.inputTokens must be number, not "12"',
    ],
  ])('name the path of %s', (_name, change, message) => {
    expect(factProblem({ ...completed, ...change }, { stored: true })).toBe(message);
  });

  it('refuse an unknown key on append, and read it back from a log as it is', () => {
    const typo = { ...withoutSeq(completed), input_hash: 'sha256:0' };
    expect(factProblem(typo, { stored: false })).toBe(
      'step.completed has unknown field input_hash; no version of turnlog writes it',
    );
    expect(factProblem({ ...typo, seq: 3 }, { stored: true })).toBeUndefined();
  });

  it('refuse on append what a log may hold but turnlog never writes: a range, an empty id', () => {
    const [started] = multiTool;
    expect(factProblem({ ...withoutSeq(started as Fact), id: '' }, { stored: false })).toBe(
      'run.started field id must be a non-empty string',
    );
    const limits = { ...(started as Fact & { limits: object }).limits, maxSteps: 0 };
    expect(factProblem({ ...withoutSeq(started as Fact), limits }, { stored: false })).toBe(
      'run.started field limits.maxSteps must be at least 1, not 0',
    );
  });

  it('name a value the runtime cannot use: a decision reason that is not text', () => {
    const decided = factAt(loadSampleLog('permission'), 5, 'tool.permission.decided');
    expect(factProblem({ ...decided, reason: 42 }, { stored: true })).toBe(
      'tool.permission.decided field reason must be string, not 42',
    );
  });

  it('say what is wrong with something that is not a fact at all', () => {
    expect(factProblem('run.started', { stored: true })).toBe('it is not an object');
    expect(factProblem({ type: 'run.exploded' }, { stored: true })).toBe(
      'its type "run.exploded" is not a known fact type',
    );
    expect(factProblem({ type: 'constructor' }, { stored: true })).toBe(
      'its type "constructor" is not a known fact type',
    );
  });

  it('find every required field missing from any sample fact, and no optional one', () => {
    const cases = allSampleFacts.flatMap((fact) => Object.keys(fact).map((key) => ({ fact, key })));
    fc.assert(
      fc.property(fc.constantFrom(...cases), ({ fact, key }) => {
        const shape = (readSchemas.facts[fact.type] as z.ZodObject).shape;
        const optional = (shape[key] as z.ZodType).safeParse(undefined).success;
        const { [key]: _removed, ...rest } = fact as unknown as Record<string, unknown>;
        const problem = factProblem(rest, { stored: true });
        if (key === 'type') {
          expect(problem).toBe('its type undefined is not a known fact type');
        } else if (optional) {
          expect(problem).toBeUndefined();
        } else {
          expect(problem).toMatch(new RegExp(`^${fact.type} field ${key} is missing \\(expected `));
        }
      }),
      { numRuns: 300 },
    );
  });

  it('give appends and reads the same fact types', () => {
    expect(Object.keys(appendSchemas.facts)).toEqual(Object.keys(readSchemas.facts));
  });
});
