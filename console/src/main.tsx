/** The console's entry: its styles (uPlot's, then ours) and the app, mounted into index.html's #app. */
import 'uplot/dist/uPlot.min.css';
import './styles.css';
import { render } from 'preact';
import { App } from './app';

render(<App />, document.getElementById('app')!);
