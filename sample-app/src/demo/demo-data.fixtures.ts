/** Demo rows written on first start. Counts of children (solutions, comments, replies) are derived. */
export interface DemoComment {
  /** One of DEMO_USERS. */
  author: string;
  content: string;
  likes: number;
  replies?: DemoComment[];
}

export interface DemoSolution {
  title: string;
  content: string;
  views: number;
  likes: number;
  comments: DemoComment[];
}

export interface DemoProblem {
  title: string;
  statement: string;
  submissions: number;
  passed: number;
  solutions: DemoSolution[];
}

export const DEMO_PROBLEMS: DemoProblem[] = [
  {
    title: 'Two Sum',
    statement: 'Given an array of integers and a target, return the indices of the two numbers that add up to it.',
    submissions: 1280,
    passed: 702,
    solutions: [
      {
        title: 'One pass with a hash map',
        content: 'Store each value’s index; for every x look up target - x before inserting x. O(n) time.',
        views: 5400,
        likes: 212,
        comments: [
          {
            author: 'Alan',
            content: 'Clean. Why look up before inserting?',
            likes: 4,
            replies: [{ author: 'Grace', content: 'So x never pairs with itself.', likes: 9 }],
          },
          { author: 'Ada', content: 'Works for negative numbers too.', likes: 2 },
        ],
      },
      {
        title: 'Sort and two pointers',
        content: 'Sort (value, index) pairs, then move two pointers inwards. O(n log n) time, O(n) space.',
        views: 1900,
        likes: 48,
        comments: [{ author: 'Alan', content: 'Remember to keep the original indices.', likes: 6 }],
      },
    ],
  },
  {
    title: 'Longest Palindromic Substring',
    statement: 'Return the longest substring of s that reads the same forwards and backwards.',
    submissions: 860,
    passed: 301,
    solutions: [
      {
        title: 'Expand around centres',
        content: 'Each of the 2n-1 centres expands while both ends match. O(n²) time, O(1) space.',
        views: 3100,
        likes: 150,
        comments: [
          {
            author: 'Edsger',
            content: 'Manacher does it in O(n), but this is what I would write in an interview.',
            likes: 11,
          },
        ],
      },
    ],
  },
  {
    title: 'Shortest Path in a Grid',
    statement: 'Find the length of the shortest path from the top-left to the bottom-right cell, avoiding walls.',
    submissions: 415,
    passed: 198,
    solutions: [],
  },
];

/** The users the page lets one sign in as. */
export const DEMO_USERS = ['Ada', 'Grace', 'Alan', 'Edsger'];

/** Comments of a solution, replies included. */
export const countComments = (comments: DemoComment[]): number =>
  comments.reduce((sum, comment) => sum + 1 + countComments(comment.replies ?? []), 0);
