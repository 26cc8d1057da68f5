import { HttpStatus } from '@nestjs/common';
import { describe, expect, it } from 'vitest';
import { errorKindOf } from '../../lib/exceptions/counter-error-kind.js';
import * as exported from '../../lib/exceptions/index.js';

const errorClasses = Object.values(exported).filter(
  (value): value is typeof exported.CounterError =>
    typeof value === 'function' && value.prototype instanceof exported.CounterError,
);

// One table says how each error is answered over HTTP, counted as a refusal and shown in status(): the
// filter, the metrics and the flush record all read it, so a new error class must get its row there.
describe('the kind of an error', () => {
  it('is set for every error class the package exports', () => {
    const unclassified = errorKindOf(new Error('not ours'));
    expect(errorClasses.length).toBeGreaterThanOrEqual(14);
    for (const errorClass of errorClasses) {
      expect(errorKindOf(new errorClass('…')), errorClass.name).not.toBe(unclassified);
    }
  });

  it('holds for a subclass an app derives from one of ours', () => {
    class AppRowMissing extends exported.CounterRowNotFoundError {}
    expect(errorKindOf(new AppRowMissing('…'))).toEqual({ httpStatus: HttpStatus.NOT_FOUND, refusal: 'row_not_found' });
  });
});
