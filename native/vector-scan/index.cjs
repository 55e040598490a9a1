'use strict';
// The addon is built by `npm ci` (node-gyp, like better-sqlite3); see src/scan.c.
module.exports = require('./build/Release/vector_scan.node');
