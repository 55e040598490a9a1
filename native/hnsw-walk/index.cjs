'use strict';
module.exports = require('./build/Release/hnsw_walk.node');
