import { startApp } from './shell.js';
import { startKiosk } from './pages/kiosk.js';

const root = document.getElementById('app')!;
if (location.pathname.startsWith('/kiosk/')) startKiosk(root);
else startApp(root);
