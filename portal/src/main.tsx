/** The portal's entry: its styles (uPlot's, the console's, then its own) and the app, mounted into #app. */
import 'uplot/dist/uPlot.min.css';
import '../../console/src/styles.css';
import './styles.css';
import { render } from 'preact';
import { App } from './app';

render(<App />, document.getElementById('app')!);
