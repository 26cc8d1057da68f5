// The invariant of every chaos scenario (DESIGN.md G1): once the fault is over and everything is flushed,
// each database counter equals its start value plus the acknowledged deltas, exactly. Per target, with
// applied = end − start, acknowledged a and uncertain u (outcome unknown, see AcknowledgedDeltas):
//   lost       = a − applied           when applied < a
//   duplicated = applied − (a + u)     when applied > a + u
// and no sampled database value may ever have gone backwards.
import type { DataSource } from 'typeorm';
import type { AcknowledgedDeltas } from './acknowledged-deltas.js';
import { readTargets, targetKey, type CounterTarget } from './counter-targets.js';
import type { BackwardStep, DatabaseSampler } from './database-sampler.js';

export interface InvariantFigures {
  /** Sum of the acknowledged deltas. */
  acknowledged: number;
  /** Sum over targets of (database value − start value). */
  inDatabase: number;
  lost: number;
  duplicated: number;
  /** Sum of the deltas whose outcome is unknown. */
  uncertain: number;
  /** Decreases seen between two database samples. */
  backwards: number;
  /** Database samples taken while the scenario ran. */
  samples: number;
  /** The first targets whose value is off, as `target: start+acknowledged (+uncertain) ≠ value`. */
  wrong: string[];
  /** The first backward steps seen. */
  backwardSteps: BackwardStep[];
}

export interface InvariantInput {
  dataSource: DataSource;
  targets: CounterTarget[];
  /** Database values before the scenario, from `readTargets`. */
  start: Map<string, number>;
  tally: AcknowledgedDeltas;
  sampler?: DatabaseSampler;
}

export async function checkInvariant({
  dataSource,
  targets,
  start,
  tally,
  sampler,
}: InvariantInput): Promise<InvariantFigures> {
  const end = await readTargets(dataSource, targets);
  const figures: InvariantFigures = {
    acknowledged: 0,
    inDatabase: 0,
    lost: 0,
    duplicated: 0,
    uncertain: 0,
    backwards: sampler?.backwards.length ?? 0,
    samples: sampler?.samples ?? 0,
    wrong: [],
    backwardSteps: sampler?.backwards.slice(0, 10) ?? [],
  };
  for (const target of targets) {
    const key = targetKey(target);
    const applied = end.get(key)! - start.get(key)!;
    const acknowledged = tally.acknowledged(target);
    const uncertain = tally.uncertain(target);
    figures.acknowledged += acknowledged;
    figures.uncertain += uncertain;
    figures.inDatabase += applied;
    if (applied < acknowledged) figures.lost += acknowledged - applied;
    if (applied > acknowledged + uncertain) figures.duplicated += applied - acknowledged - uncertain;
    if ((applied < acknowledged || applied > acknowledged + uncertain) && figures.wrong.length < 10) {
      const expected = `${start.get(key)}+${acknowledged}${uncertain ? ` (+${uncertain} uncertain)` : ''}`;
      figures.wrong.push(`${key}: ${expected} ≠ ${end.get(key)}`);
    }
  }
  return figures;
}
