// The plotly.js bundle the dashboard serves (static/vendor/plotly/): plotly.js's core, which
// holds the scatter trace, and the other trace types the charts draw. A chart that needs one
// more registers it here and rebuilds with `make plotly-bundle`
// (tests/config/test_plotly_bundle.py compares this list with the charts' code).
'use strict';

var Plotly = require('plotly.js/lib/core');

Plotly.register([
    require('plotly.js/lib/bar'),
    require('plotly.js/lib/heatmap'),
    require('plotly.js/lib/histogram'),
]);

module.exports = Plotly;
