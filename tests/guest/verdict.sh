# verdict N LINE STATUS: the TAP result of the guest's test N, whose list
# line (its program and arguments) is LINE and whose exit status is STATUS,
# as tests/guest/init prints it. Our kernels have what the stats programs
# need: a skip (exit status 4, kselftest's KSFT_SKIP) of one of them is a
# failure; another program's skip is a skip.
# shellcheck shell=sh
must_run="kvm_binary_stats_test kvm_binary_stats_test-pidns kvm-qemu-stats kvm_stats_stress"
verdict() {
	case $3 in
	0) echo "ok $1 $2" ;;
	4) case " $must_run " in
		*" ${2%% *} "*) echo "not ok $1 $2 # skipped, but this kernel must run it" ;;
		*) echo "ok $1 $2 # SKIP" ;;
		esac ;;
	*) echo "not ok $1 $2 # exit status $3" ;;
	esac
}
