import test from 'ava';
import { MAIN_LINGER_MS, mainWanted } from '../../src/monitors/mainStream.js';

test('the main stream is wanted while a face is tracked and for the linger after, then not', (t) => {
  t.true(mainWanted(true, -Infinity, 0));
  t.false(mainWanted(false, -Infinity, 0), 'never demanded: closed');
  t.true(mainWanted(false, 1000, 1000 + MAIN_LINGER_MS - 1));
  t.false(mainWanted(false, 1000, 1000 + MAIN_LINGER_MS));
});
