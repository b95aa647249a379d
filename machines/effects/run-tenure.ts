import type { OpenRun } from '../../store/event-store.ts';
import type { RunLeaseState } from '../../store/run-leases.ts';
import type { DamagedRun, LoadedRun } from '../pure/resume-run.ts';
import type { TurnMachine } from '../pure/turn-machine.ts';
import type { LeaseToken, RunDriver } from './run-driver.ts';
import type { RunHandles, RunIds } from './run-handles.ts';

/** The session's unfinished run is driven by another worker, under this live lease. */
export interface DrivenElsewhere {
  elsewhere: RunLeaseState;
}

/** What `RunTenure.load` finds: a run to resume, its damage, where else it is driven, or nothing. */
export type LoadedTenure = LoadedRun | DamagedRun | DrivenElsewhere | undefined;

/**
 * Why a driver drives its run here no more: `parked` (waiting for a person: its actor is
 * dropped, the log rebuilds it), `ended` (its `run.ended` is durable, or the driver failed),
 * `lost` (a worker's lease on the run is gone: another worker goes on), `unstarted` (its
 * `run.started` was never stored).
 */
export type LeaveReason = 'parked' | 'ended' | 'lost' | 'unstarted';

/**
 * How a runtime holds the runs it drives (architecture/workers.md, "The runtime side"). Live
 * runs (`LiveRuns`) tell it what happens to each run; it does its part. On a store for one
 * process every run is the runtime's own to drive, always, and each method is trivial
 * (`SingleProcessTenure`). A worker on a store several processes share (`WorkerTenure`,
 * machines/effects/worker/) drives a run only under a lease, takes the requests other workers
 * post to the inbox of each run it drives, lets the handles of a run driven elsewhere follow it
 * through the store, and takes over the runs of workers that died; it reaches the live runs only
 * through `TenureHost`.
 */
export interface RunTenure {
  /**
   * Other workers drive runs of this store too: a live driver's copy of the log may lag the log
   * (a driver here may have lost its lease without knowing it yet), and a run found unfinished
   * and not parked was interrupted (its driver died): it resumes with the recovery sequence.
   */
  readonly shared: boolean;
  /** Claims a new run before its `run.started`; throws when somebody holds it already. */
  claim(ids: RunIds): Promise<void>;
  /**
   * The unfinished runs `recover()` resumes: every one (`store.openRuns()`, the runs index
   * checked against the log) on a store for one process; with a worker, only those nobody
   * drives and no worker parked (`unattendedRuns()`: expired leases and runs never leased, by
   * index), so a worker's `recover()` costs nothing per parked run (architecture/workers.md).
   */
  runsToRecover(): Promise<OpenRun[]>;
  /**
   * Reads the session and rebuilds its unfinished run (`runId`, else its last one) under this
   * runtime's claim on it (`loadRun`); a run that cannot go on (ended meanwhile, or damaged)
   * gives the claim back. `elsewhere` when another worker drives it.
   */
  load(request: {
    machine: TurnMachine;
    sessionId: string;
    runId: string | undefined;
  }): Promise<LoadedTenure>;
  /**
   * The fencing token a new driver of the run stamps on every fact (`undefined`: none); throws
   * `LeaseLostError` when the claim was lost since it was taken.
   */
  token(ids: RunIds): LeaseToken | undefined;
  /**
   * A handle of a run nobody drives here was opened (`LiveRuns.follow`): with a worker it follows
   * the run through the store until `run.ended`; on a store for one process there is nothing to
   * follow (a parked run is rebuilt here, and feeds the handle then).
   */
  follow(ids: RunIds): void;
  /**
   * Every handle of a run nobody drives here was let go (their `follow()` signals aborted): with
   * a worker, the run is followed through the store no more.
   */
  unfollow(ids: RunIds): void;
  /** A driver of the run starts here (its handles have sinks already): its part begins. */
  drive(ids: RunIds, driver: RunDriver): void;
  /**
   * Does the requests waiting in the run's inbox on its live driver, now (the live runs call it
   * under the session's lock, before they drop a parked run): true when there was one. A parked
   * run with a request pending is taken up, not dropped: dropping it left the request for a next
   * driver that parked it again before its inbox delivered (issue 26, defect 1).
   */
  takeUp(ids: RunIds, driver: RunDriver): Promise<boolean>;
  /**
   * The driver drives the run here no more (`reason`): its part ends. Called once the live runs
   * dropped it; with `parked`, under the session's lock.
   */
  leave(ids: RunIds, driver: RunDriver, reason: LeaveReason): Promise<void>;
  /**
   * True when a live driver of the run works under a claim this runtime holds no more, having
   * claimed the run again since (a worker took it over from itself): the driver is failed, and
   * the run is to be recovered anew.
   */
  supersede(driver: RunDriver): boolean;
  /** True for the error a driver fails with once it lost its claim on the run (`LeaseLostError`). */
  isLost(error: unknown): boolean;
  /** An error of the tenure's own part (a release the store did not take): reported, not thrown. */
  warn(error: unknown): void;
  /** Ends the tenure once no work is queued on any session: every run it holds is handed on. */
  close(): Promise<void>;
}

/** What a tenure calls back on the live runs (`LiveRuns` implements it). */
export interface TenureHost {
  /** Serializes work on one session: the runtime's public operations, parking, inbox requests. */
  withSession<T>(sessionId: string, work: () => Promise<T>): Promise<T>;
  /** The live driver of the session's run, when the run is driven here. */
  driverOf(sessionId: string): RunDriver | undefined;
  /** The session's unfinished run, driven here (rebuilt from the log if needed) or elsewhere. */
  active(sessionId: string): Promise<RunDriver | DrivenElsewhere | undefined>;
  /** Rehydrates one unfinished run with the recovery sequence, as `runtime.recover()` does. */
  recover(sessionId: string, runId: string): Promise<unknown>;
  /** The sinks of the runtime's unfinished runs' handles. */
  readonly handles: RunHandles;
  /** True once the runtime was closed. */
  readonly closed: boolean;
}
