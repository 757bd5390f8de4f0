// Builds plotly-audit.min.js from index.js the way plotly.js builds its own dist bundles
// (its esbuild-config.js: an IIFE defining the global Plotly, ES2016, minified), with the
// licence banner its dist files carry. Run by `make plotly-bundle`.
'use strict';

const esbuild = require('esbuild');
const path = require('path');
const { version } = require('plotly.js/package.json');

const outfile = process.argv[2];
const banner = [
    '/**',
    `* plotly.js (bar, heatmap, histogram, scatter - minified) v${version}`,
    '* Copyright 2012-2026, Plotly, Inc.',
    '* All rights reserved.',
    '* Licensed under the MIT license',
    '*/',
].join('\n');

esbuild
    .build({
        entryPoints: [path.join(__dirname, 'index.js')],
        outfile,
        format: 'iife',
        globalName: 'Plotly',
        bundle: true,
        minify: true,
        sourcemap: false,
        legalComments: 'none',
        banner: { js: banner },
        define: { global: 'window', 'define.amd': 'false', 'process.env.NODE_DEBUG': 'false' },
        // The one stylesheet plotly.js imports is maplibre's, for map traces this bundle lacks.
        loader: { '.css': 'empty' },
        target: 'es2016',
        logLevel: 'warning',
    })
    .catch(() => process.exit(1));
