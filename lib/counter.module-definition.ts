import { ConfigurableModuleBuilder } from '@nestjs/common';
import { getDataSourceToken } from '@nestjs/typeorm';
import { COUNTER_DATA_SOURCE } from './counter.constants.js';
import type { CounterModuleExtras, CounterModuleOptions } from './interfaces/counter-module-options.interface.js';

export const {
  ConfigurableModuleClass,
  MODULE_OPTIONS_TOKEN: COUNTER_MODULE_OPTIONS,
  OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<CounterModuleOptions>({ moduleName: 'Counter' })
  .setClassMethodName('forRoot')
  .setExtras<CounterModuleExtras>({ isGlobal: true, dataSource: 'default' }, (definition, extras) => ({
    ...definition,
    global: extras.isGlobal,
    providers: [
      ...(definition.providers ?? []),
      // The data source is known when the module is defined, so Nest resolves it before our providers.
      { provide: COUNTER_DATA_SOURCE, useExisting: getDataSourceToken(extras.dataSource) },
    ],
  }))
  .build();
