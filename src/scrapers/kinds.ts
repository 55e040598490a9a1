// Every scraper kind the daemon serves registers itself on import (the parent and the worker load this).
import './forum/forumKind.js';
import './places/placesKind.js';

export { scraperKind, scraperKinds } from './registry.js';
