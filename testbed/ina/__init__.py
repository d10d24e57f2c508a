"""In-network aggregation on a star: INA vs gloo, switch-as-optimizer training, demo, soak, compose roles."""
