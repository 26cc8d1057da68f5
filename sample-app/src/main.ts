import { Logger } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module.js';
import { DEFAULT_PORT } from './config/app.defaults.js';

const app = await NestFactory.create(AppModule);
// On SIGTERM or SIGINT, Nest closes the app first: the counter module flushes what is left in Redis.
app.enableShutdownHooks();
const port = Number(app.get(ConfigService).get<string>('PORT') || DEFAULT_PORT);
await app.listen(port);
Logger.log(`Online judge listening on http://localhost:${port}`, 'Main');
