import type pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PostgresStore } from '../../../store/postgres/postgres-store.ts';
import type { InboxItem } from '../../../store/run-inbox.ts';
import { LeaseLostError, type RunLease } from '../../../store/run-leases.ts';
import { testSchema } from '../../helpers/postgres.ts';
import { storeFacts } from '../store-facts.ts';
import { leaseMs, under } from './postgres-lease-fixture.ts';

const a = storeFacts('session_a');

describe('postgresStore inbox', () => {
  let database: ReturnType<typeof testSchema>;
  let admin: pg.Pool;
  let owner: PostgresStore;
  let sender: PostgresStore;
  let lease: RunLease;

  beforeEach(async () => {
    database = testSchema('inbox');
    admin = database.pool();
    owner = database.open();
    sender = database.open();
    lease = await acquire(owner, 'w1');
    await owner.append('session_a', [under(lease, a.runStarted('f1', 'run_1'))]);
  });

  afterEach(async () => {
    await admin.end();
    await database.drop();
  });

  async function acquire(store: PostgresStore, workerId: string) {
    const attempt = await store.acquireLease({
      sessionId: 'session_a',
      runId: 'run_1',
      workerId,
      leaseMs,
    });
    if (!attempt.acquired) throw new Error(`${workerId} did not get the lease`);
    return attempt.lease;
  }

  const steer = (id: string, text = 'also check b.md') => ({
    id,
    sessionId: 'session_a',
    runId: 'run_1',
    kind: 'steer' as const,
    input: { text },
    postedBy: 'w2',
  });

  /** The requests a store's inbox subscription delivers; `next()` awaits the next one. */
  function inbox(store: PostgresStore) {
    const items: InboxItem[] = [];
    const waiting: ((item: InboxItem) => void)[] = [];
    const unsubscribe = store.subscribeInbox('session_a', (item) => {
      const wait = waiting.shift();
      if (wait === undefined) items.push(item);
      else wait(item);
    });
    const next = () =>
      new Promise<InboxItem>((resolve) => {
        const item = items.shift();
        if (item === undefined) waiting.push(resolve);
        else resolve(item);
      });
    return { next, unsubscribe, items };
  }

  /** What the runtime's driver does with a request: its fact under the request's id, then the settlement. */
  async function perform(store: PostgresStore, held: RunLease, item: InboxItem) {
    const text = (item.input as { text: string }).text;
    await store.append('session_a', [under(held, { ...a.steering(item.id, 'run_1', text) })]);
    return store.settleInboxItem({ id: item.id, lease: held, outcome: { status: 'accepted' } });
  }

  it("hands a request to the run's driver, and the driver's outcome back to the sender", async () => {
    const requests = inbox(owner);
    await sender.postToInbox(steer('req_1'));
    const outcome = sender.waitForInboxOutcome('req_1');
    const item = await requests.next();
    expect(item).toMatchObject({ ...steer('req_1'), outcome: undefined });
    await perform(owner, lease, item);
    expect(await outcome).toEqual({ status: 'accepted', workerId: 'w1', epoch: 1 });
    const facts = await sender.read('session_a');
    expect(facts.map((fact) => [fact.id, fact.type, fact.workerId])).toEqual([
      ['f1', 'run.started', 'w1'],
      ['req_1', 'steering.received', 'w1'],
    ]);
  });

  it('brings a refusal back with the error the driver met', async () => {
    const requests = inbox(owner);
    await sender.postToInbox(steer('req_1'));
    const item = await requests.next();
    const error = { name: 'NoActiveRunError', message: 'session_a has no unfinished run' };
    await owner.settleInboxItem({ id: item.id, lease, outcome: { status: 'refused', error } });
    expect(await sender.waitForInboxOutcome('req_1')).toEqual({
      status: 'refused',
      error,
      workerId: 'w1',
      epoch: 1,
    });
    // The first settlement stands: a later one learns it.
    expect(
      await owner.settleInboxItem({ id: item.id, lease, outcome: { status: 'accepted' } }),
    ).toMatchObject({ status: 'refused' });
  });

  it('stores a request posted twice once, and refuses another request under a known id', async () => {
    await sender.postToInbox(steer('req_1'));
    await sender.postToInbox(steer('req_1'));
    expect((await owner.pendingInbox({ sessionId: 'session_a' })).map((item) => item.id)).toEqual([
      'req_1',
    ]);
    await expect(sender.postToInbox(steer('req_1', 'something else'))).rejects.toMatchObject({
      name: 'StoreInputError',
      message: expect.stringMatching(/id req_1 is already used by another request/),
    });
  });

  it('delivers the requests waiting before the driver subscribed, oldest first, each once', async () => {
    await sender.postToInbox(steer('req_1', 'one'));
    await sender.postToInbox(steer('req_2', 'two'));
    const requests = inbox(owner);
    expect([(await requests.next()).id, (await requests.next()).id]).toEqual(['req_1', 'req_2']);
    await sender.postToInbox(steer('req_3', 'three'));
    expect((await requests.next()).id).toBe('req_3');
    // A notification for the old ones (another post) delivers none of them again.
    await sender.postToInbox({ ...steer('req_4'), sessionId: 'session_a', runId: 'run_2' });
    expect((await requests.next()).id).toBe('req_4');
    expect(requests.items).toEqual([]);
  });

  it('keeps a request pending for the next driver when its driver lost the run before settling it', async () => {
    const requests = inbox(owner);
    await sender.postToInbox(steer('req_1'));
    const item = await requests.next();
    await admin.query(
      `UPDATE "${database.schema}".leases SET expires_at = clock_timestamp() - interval '1 second'`,
    );
    const next = database.open();
    const [taken] = await next.takeOverExpiredLeases({ workerId: 'w3', leaseMs });
    if (taken === undefined) throw new Error('no takeover');
    const lost = await perform(owner, lease, item).catch((caught: unknown) => caught);
    expect(LeaseLostError.isInstance(lost)).toBe(true);
    const refusedSettle = await owner
      .settleInboxItem({ id: item.id, lease, outcome: { status: 'accepted' } })
      .catch((caught: unknown) => caught);
    expect(LeaseLostError.isInstance(refusedSettle)).toBe(true);
    expect((await next.inboxItem('req_1'))?.outcome).toBeUndefined();

    const handedOver = await inbox(next).next();
    expect(handedOver.id).toBe('req_1');
    await perform(next, taken, handedOver);
    expect(await sender.waitForInboxOutcome('req_1')).toEqual({
      status: 'accepted',
      workerId: 'w3',
      epoch: 2,
    });
  });

  it('settles a request whose fact a crashed driver committed, without doing it twice', async () => {
    const requests = inbox(owner);
    await sender.postToInbox(steer('req_1'));
    const item = await requests.next();
    await owner.append('session_a', [
      under(lease, a.steering(item.id, 'run_1', 'also check b.md')),
    ]);
    // The driver dies here, before settling; its lease runs out and another worker takes over.
    await owner.close();
    await admin.query(
      `UPDATE "${database.schema}".leases SET expires_at = clock_timestamp() - interval '1 second'`,
    );
    const next = database.open();
    const [taken] = await next.takeOverExpiredLeases({ workerId: 'w3', leaseMs });
    if (taken === undefined) throw new Error('no takeover');
    const again = await inbox(next).next();
    const redo = await next.append('session_a', [
      under(taken, a.steering(again.id, 'run_1', 'also check b.md')),
    ]);
    expect(redo.appended).toEqual([]);
    await next.settleInboxItem({ id: again.id, lease: taken, outcome: { status: 'accepted' } });
    expect(await sender.waitForInboxOutcome('req_1')).toMatchObject({ status: 'accepted' });
    const steering = (await next.read('session_a')).filter((fact) => fact.id === 'req_1');
    expect(steering).toHaveLength(1);
  });

  it('ends a wait when its store closes, leaving the request in the inbox', async () => {
    await sender.postToInbox(steer('req_1'));
    const waiting = sender.waitForInboxOutcome('req_1');
    await sender.close();
    await expect(waiting).rejects.toMatchObject({ name: 'StoreClosedError' });
    expect((await owner.inboxItem('req_1'))?.outcome).toBeUndefined();
  });

  it('stops waiting with the signal, and refuses to wait for a request never posted', async () => {
    await sender.postToInbox(steer('req_1'));
    const controller = new AbortController();
    const waiting = sender.waitForInboxOutcome('req_1', { signal: controller.signal });
    controller.abort(new Error('the caller gave up'));
    await expect(waiting).rejects.toThrow('the caller gave up');
    await expect(sender.waitForInboxOutcome('req_unknown')).rejects.toMatchObject({
      name: 'StoreInputError',
      message: expect.stringMatching(/no request has id req_unknown/),
    });
  });
});
