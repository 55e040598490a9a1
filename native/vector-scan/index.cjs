'use strict';
// build/Release/vector_scan.node when `npm ci` compiled it in a checkout (node-gyp, see binding.gyp), else the
// prebuild for this platform under prebuilds/linux-<arch>/ that the Debian package ships
// (packaging/build-package.sh): node-gyp-build picks whichever loads, as for usearch.
module.exports = require('node-gyp-build')(__dirname);
