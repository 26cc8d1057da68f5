import { Controller, Get, Req, Res } from '@nestjs/common';
import { PageAssets } from './page/page.assets.js';
import { setPageHeaders, type HeaderSink } from './page/page-headers.js';

/** The routes the README's curl lines show. */
const ROUTES: Record<string, string> = {
  'GET /problems?page=&size=': 'problems with live counts',
  'GET /problems/:id': 'a problem with its solutions, live counts on all',
  'POST /problems/:id/submissions': '{"passed": true|false}: counts a submission',
  'POST /problems/:id/solutions': '{"title", "content"}: adds a solution',
  'GET /solutions?page=&size=&problemId=': 'solutions with live counts',
  'GET /solutions/trending': 'the 5 solutions liked most in the last 24 hours, live: [{id, title, likes}]',
  'GET /solutions/:id': 'counts a view, returns the solution',
  'GET /solutions/:id/counters': 'each counter live, in SQL (read from the table) and pending; counts no view',
  'GET /solutions/:id/views/hourly':
    'views per hour over the last 24 hours (UTC), live: [{start, value}]; counts no view',
  'GET /users': 'the demo users; send "X-User-Id: <id>" to act as one',
  'POST /solutions/:id/like': 'with X-User-Id: like (a second like changes nothing); DELETE to unlike',
  'POST /solutions/:id/comments': '{"content", "parentId"?}: adds a comment, or a reply (its author: X-User-Id)',
  'GET /comments?page=&size=&solutionId=': 'comments with live counts',
  'POST /comments/:id/like': 'with X-User-Id: like (a second like changes nothing); DELETE to unlike',
  'GET /likes': 'with X-User-Id: the ids of the solutions and comments that user likes',
  'GET /overview': 'problems with their solutions and comments, live counts on all: what the page shows',
  'GET /health/counters': 'CounterService.status(): backlog, last flush, data loss',
  'GET /flush': "the app's flush: paused or not, the last minute second by second, the flushes that wrote rows",
  'POST /flush/pause, /flush/resume, /flush/now': 'pauses or resumes the scheduled flush, or flushes at once',
  'POST /bursts': '{"solutionId"}: 50 simulated visitors send 1,000 views and likes through these routes',
  'GET /bursts/latest': "the last burst's tally: changes accepted, SQL statements and rows flushed, lost",
  'POST /admin/counters/:entity/:counter/audit':
    '{"sample"?}, with "Authorization: Bearer <ADMIN_TOKEN>": counts that differ from their rows (problems, solutions, comments)',
  'POST /admin/counters/:entity/:counter/recount':
    '{"ids"?}, with "Authorization: Bearer <ADMIN_TOKEN>": sets counts to what their rows say',
};

@Controller()
export class IndexController {
  constructor(private readonly assets: PageAssets) {}

  /** GET /: the page for a browser (it asks for HTML), the list of routes for curl and other clients. */
  @Get()
  index(
    @Req() request: { accepts(types: string[]): string | false },
    @Res({ passthrough: true }) response: HeaderSink,
  ) {
    const page = this.assets.get('index.html');
    if (page && request.accepts(['json', 'html']) === 'html') {
      setPageHeaders(response, page.type);
      return page.content;
    }
    return { app: 'online judge, the nestjs-counter sample app', page: 'open / in a browser', routes: ROUTES };
  }
}
