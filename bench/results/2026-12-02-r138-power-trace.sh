B=$PWD/build-dev; export LD_LIBRARY_PATH=$B/lib:/usr/local/cuda/lib64; mkdir -p $OUT/r138; cd $OUT/r138
q="timestamp,clocks.sm,power.draw,clocks_event_reasons.sw_power_cap,clocks_event_reasons.hw_slowdown,temperature.gpu"
nvidia-smi -q -d PERFORMANCE | grep -A3 "Counters" > smi-before.txt
nvidia-smi --query-gpu=$q --format=csv,nounits -lms 20 > trace.csv & tp=$!
sleep 3
$B/bin/hopattn bench --csv cells.csv --rounds 1 --warmup-ms 0 --no-ceilings --hdim 256 --causal 1 --seqlen 4096 > cells.log 2>&1
sleep 3
$B/bin/hopattn bench --csv cells2.csv --rounds 2 --no-ceilings --hdim 64,128 --causal 0 --seqlen 4096,16384 >> cells.log 2>&1
sleep 1; kill $tp
nvidia-smi -q -d PERFORMANCE | grep -A3 "Counters" > smi-after.txt
wc -l trace.csv; cat smi-before.txt smi-after.txt
