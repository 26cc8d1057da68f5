// The fault schedule of the randomised soak (scenario 10): a list of episodes drawn from a seed alone,
// so that one seed always gives the same faults, in the same order, on the same instances, with the
// same durations. Only faults after which the invariant is exact (nothing Redis holds is lost): an
// instance killed or frozen, the database refusing or dropping connections, one instance cut off from
// Redis, and storms of simultaneous flushes. Each kind comes once (in a seeded order) before any repeats,
// however short the soak.
import { seededRandom } from '../../support/seeded-random.js';

export const FAULT_KINDS = [
  'instance-killed',
  'instance-frozen',
  'database-reset',
  'database-blackhole',
  'redis-blackhole',
  'flush-storm',
] as const;

export type FaultKind = (typeof FAULT_KINDS)[number];

export interface FaultEpisode {
  kind: FaultKind;
  /** Quiet load before the fault, in ms. */
  quietMs: number;
  /** The instance it hits (an index into the deployment's instances); unused by database faults and storms. */
  instance: number;
  /**
   * instance-killed: how long the instance flushes alone before the SIGKILL; instance-frozen, database-*,
   * redis-blackhole: how long the fault lasts; flush-storm: unused.
   */
  durationMs: number;
  /** instance-killed: how long until its replacement is started. flush-storm: rounds. */
  extra: number;
}

/** Milliseconds an episode is planned to take, quiet time included (boots and drains come on top). */
export const plannedMs = (episode: FaultEpisode) =>
  episode.quietMs +
  (episode.kind === 'flush-storm'
    ? episode.extra * 30
    : episode.durationMs + (episode.kind === 'instance-killed' ? episode.extra : 0));

export function faultSchedule(seed: number, totalMs: number, instances: number): FaultEpisode[] {
  const random = seededRandom(seed);
  const between = (min: number, max: number) => min + Math.floor(random() * (max - min + 1));
  const firstRound = [...FAULT_KINDS];
  for (let i = firstRound.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [firstRound[i], firstRound[j]] = [firstRound[j], firstRound[i]];
  }
  const episodes: FaultEpisode[] = [];
  for (let planned = 0; planned < totalMs || firstRound.length > 0;) {
    const kind = firstRound.shift() ?? FAULT_KINDS[Math.floor(random() * FAULT_KINDS.length)];
    const episode: FaultEpisode = {
      kind,
      quietMs: between(200, 1_200),
      instance: between(0, instances - 1),
      durationMs: 0,
      extra: 0,
    };
    switch (kind) {
      case 'instance-killed':
        episode.durationMs = between(0, 400);
        episode.extra = between(100, 1_000);
        break;
      case 'instance-frozen':
        // Past the lease (1 s), so that another instance takes its shards over.
        episode.durationMs = between(1_200, 3_000);
        break;
      case 'flush-storm':
        episode.extra = between(5, 20);
        break;
      default:
        episode.durationMs = between(300, 2_000);
    }
    episodes.push(episode);
    planned += plannedMs(episode);
  }
  return episodes;
}
