export * from './counted-options.interface.js';
export * from './entity-class.interface.js';
export * from './counter-module-options.interface.js';
export * from './flush-report.interface.js';
export * from './counter-status.interface.js';
export * from './counter-health-options.interface.js';
export * from './counter-change.interface.js';
export * from './reconcile.interface.js';
