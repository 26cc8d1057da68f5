import { Controller, Get } from '@nestjs/common';

/** The routes the README's curl lines show, for whoever opens http://localhost:3000 in a browser. */
const ROUTES: Record<string, string> = {
  'GET /problems?page=&size=': 'problems with live counts',
  'GET /problems/:id': 'a problem with its solutions, live counts on all',
  'POST /problems/:id/submissions': '{"passed": true|false}: counts a submission',
  'POST /problems/:id/solutions': '{"title", "content"}: adds a solution',
  'GET /solutions?page=&size=&problemId=': 'solutions with live counts',
  'GET /solutions/:id': 'counts a view, returns the solution',
  'GET /users': 'the demo users; send "X-User-Id: <id>" to act as one',
  'POST /solutions/:id/like': 'with X-User-Id: like (a second like changes nothing); DELETE to unlike',
  'POST /solutions/:id/comments': '{"content", "parentId"?}: adds a comment, or a reply',
  'GET /comments?page=&size=&solutionId=': 'comments with live counts',
  'POST /comments/:id/like': 'with X-User-Id: like (a second like changes nothing); DELETE to unlike',
  'GET /likes': 'with X-User-Id: the ids of the solutions and comments that user likes',
  'GET /health/counters': 'CounterService.status(): backlog, last flush, data loss',
};

@Controller()
export class IndexController {
  @Get()
  index() {
    return { app: 'online judge, the nestjs-counter sample app', routes: ROUTES };
  }
}
